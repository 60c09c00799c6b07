"""The sandbox around a service job's run: bubblewrap, so that what the job runs cannot reach cuprobe.

A job's sanitizer and its target (which talk over loopback) run in their own PID, network, IPC and UTS namespaces:
no view of other processes' /proc entries (the API's, the worker's), no network but their own loopback (no broker,
no store, no other host), the whole file system read-only with cuprobe's data directory, /tmp, /run and the
worker's home hidden, and writes only in the job's own directory, where HOME, TMPDIR and the caches (Triton,
bytecode, torch's inductor, cuprobe's allocator and extensions, CUDA's JIT) point. The GPU's device files are bound
in. Local runs (`cuprobe run`, `exec`, `gate --local`) are the user's own and run as they are.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import site
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cuprobe import IMPORT_ROOT
from cuprobe.probes.base import Probe
from cuprobe.service.config import Settings

BWRAP = "bwrap"
NO_SANDBOX = (
    "this worker runs no job that runs code of its own (a command or test job, replay of the user's program) outside "
    "a sandbox, and it cannot make one (its operator may set CUPROBE_UNSAFE_NO_SANDBOX=1, which docs/service.md calls "
    "unsafe)"
)
# Where a job's writable files go, under its own directory.
HOME_DIR, TMP_DIR, CACHE_DIR = "home", "tmp", "cache"
# The GPU's device files (NVIDIA's driver), bound into the sandbox's own /dev.
GPU_DEVICES = ("/dev/nvidia*", "/dev/nvidia-caps/*", "/dev/dri/*")
# Hidden behind an empty tmpfs: sockets of local services (Redis, PostgreSQL) and other jobs' temporary files.
HIDDEN = ("/tmp", "/run", "/var/run", "/var/tmp", "/dev/shm")


# Replay parameters that point the worker's processes at code or files of the submitter's choosing: the program
# (entry, script), its working directory (on its PYTHONPATH, so a sitecustomize.py there runs) and the Triton cache
# (compiled kernels that are loaded, not rebuilt).
REPLAY_PROBE = "replay"
REPLAY_USER_CODE_PARAMS = ("entry", "script", "cwd", "triton_cache_dir")


def runs_user_code(params: Mapping[str, Any]) -> bool:
    """Whether replay parameters name the user's own program or files rather than the built-in example alone."""
    return any(params.get(name) for name in REPLAY_USER_CODE_PARAMS)


def runs_jobs_code(probe: Probe[Any], params: Mapping[str, Any]) -> bool:
    """Whether a run of `probe` runs code the job chose: a command (or test) job, or replay of the user's program."""
    return probe.runs_users_program or (probe.name == REPLAY_PROBE and runs_user_code(params))


def bwrap_path() -> str | None:
    return shutil.which(BWRAP)


@functools.lru_cache(maxsize=1)
def sandbox_refusal() -> str | None:
    """Why no sandbox can be made on this machine (bubblewrap missing, or user namespaces refused), or None. Asked
    once per process: a tiny sandbox is started and must run `true`."""
    found = bwrap_path()
    if found is None:
        return "bubblewrap (bwrap) is not installed on this worker (Debian/Ubuntu: apt-get install bubblewrap)"
    probe = [found, "--ro-bind", "/", "/", "--unshare-all", "--proc", "/proc", "--dev", "/dev", "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not be started: {exc}"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no message"])[-1][:300]
        return (
            f"bubblewrap cannot make a sandbox here ({said}): user namespaces are refused (Docker's default seccomp "
            "profile and some AppArmor setups do, see docker/README.md)"
        )
    return None


def job_environment(env: Mapping[str, str], workdir: Path) -> dict[str, str]:
    """`env` with HOME, TMPDIR and every cache a probe writes pointed into the job's directory."""
    cache = workdir / CACHE_DIR
    out = dict(env)
    out.update(
        HOME=str(workdir / HOME_DIR),
        TMPDIR=str(workdir / TMP_DIR),
        XDG_CACHE_HOME=str(cache),
        CUPROBE_CACHE_DIR=str(cache / "cuprobe"),
        CUPROBE_EXTENSION_DIR=str(cache / "extensions"),
        TRITON_CACHE_DIR=str(cache / "triton"),
        TORCHINDUCTOR_CACHE_DIR=str(cache / "inductor"),
        CUDA_CACHE_PATH=str(cache / "nv"),
    )
    if "PYTHONPYCACHEPREFIX" in out:
        out["PYTHONPYCACHEPREFIX"] = str(cache / "pycache")
    return out


def job_paths(params: Mapping[str, Any]) -> list[Path]:
    """What a job names that must stay visible where a hidden folder covers it: its program (as named and as
    resolved), its working directory, replay's script and Triton cache."""
    found: list[Path] = []
    argv = params.get("argv")
    if isinstance(argv, list) and argv and isinstance(argv[0], str) and (program := shutil.which(argv[0])):
        found += [Path(program).absolute(), Path(program).resolve()]
    for name in ("cwd", "script", "triton_cache_dir"):
        if isinstance(value := params.get(name), str) and os.path.isabs(value):
            found.append(Path(value))
    return found


def sandbox_command(
    cmd: list[str], workdir: Path, settings: Settings, home: str | None = None, shown: Sequence[Path] = ()
) -> list[str]:
    """`cmd` inside bubblewrap: new PID, network, IPC and UTS namespaces, the file system read-only, the data
    directory, /tmp, /run and the worker's home (`home`, unless cuprobe or its interpreter live there) hidden, the
    job's directory writable, the GPU's device files bound in. It dies with the worker. `shown`: paths the job names
    (job_paths), bound back read-only where a hidden folder covers them."""
    found = bwrap_path()
    if found is None:
        raise RuntimeError("bubblewrap is not installed")
    workdir = workdir.resolve()
    args = [found, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    args += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    args += ["--die-with-parent", "--hostname", "cuprobe-job"]
    # What the run needs that may lie under a hidden folder: cuprobe's code, the interpreter, the sanitizer.
    python = Path(settings.python or sys.executable)
    needed = [IMPORT_ROOT, Path(sys.prefix), Path(sys.base_prefix), python.parent, python.resolve().parent]
    needed += [Path(os.getcwd()), Path(site.getusersitepackages())]
    if settings.sanitizer_path is not None:
        needed += [Path(settings.sanitizer_path).parent, Path(settings.sanitizer_path).resolve().parent]
    needed = [path.resolve() for path in needed]
    hidden = [Path(h) for h in HIDDEN if os.path.isdir(h) and not os.path.islink(h)]
    # The data directory (the store's file, other jobs' folders) and the worker's home, unless the run lives there.
    for folder in [Path(settings.data_dir).resolve(), *([Path(home)] if home else [])]:
        if folder.is_dir() and not any(_inside(path, folder) for path in needed):
            hidden.append(folder)
    for folder in hidden:
        args += ["--tmpfs", str(folder)]
    shown_again = dict.fromkeys([*needed, *shown])
    # Only what exists (bwrap's -try skips a missing source but fails on one below a file, ENOTDIR), and only the
    # outermost: a path below one already bound back is there with it, and bwrap cannot make a mount point inside
    # a read-only bind (a checkout under /tmp whose interpreter is in its .venv).
    bound: list[Path] = []
    for path in sorted(p for p in shown_again if p.exists() and any(_inside(p, folder) for folder in hidden)):
        if not any(_inside(path, outer) for outer in bound):
            bound.append(path)
            args += ["--ro-bind-try", str(path), str(path)]
    for pattern in GPU_DEVICES:
        for device in sorted(glob.glob(pattern)):
            args += ["--dev-bind", device, device]
    args += ["--bind", str(workdir), str(workdir), "--chdir", os.getcwd(), "--"]
    return [*args, *cmd]


def prepare_workdir(workdir: Path) -> None:
    """The folders job_environment points at, made before the sandbox starts (the rest is read-only there)."""
    for name in (HOME_DIR, TMP_DIR, CACHE_DIR):
        (workdir / name).mkdir(parents=True, exist_ok=True)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents
