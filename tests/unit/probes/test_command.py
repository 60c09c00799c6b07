"""command: off unless enabled, allowlisted executables only, an allowlisted environment, wall-clock limit."""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest

from cuprobe.probes.command import allowed, child_env
from tests.unit.probes.conftest import ProbeRun


@pytest.fixture
def script(tmp_path: Path) -> Path:
    """An executable that prints its environment and exits with $1 (default 0)."""
    path = tmp_path / "bin" / "show-env"
    path.parent.mkdir()
    path.write_text('#!/bin/sh\nenv\nexit "${1:-0}"\n')
    path.chmod(0o755)
    return path


def enabled(allow: str, **extra: str) -> dict[str, str]:
    return {"CUPROBE_COMMAND_ENABLED": "1", "CUPROBE_COMMAND_ALLOWLIST": allow, **extra}


def test_off_unless_enabled(run_probe: ProbeRun, script: Path) -> None:
    code, result, _ = run_probe("command", {"argv": [str(script)]}, "memcheck")
    assert code == 69
    assert "CUPROBE_COMMAND_ENABLED=1" in result["unavailable"] and result["cases"] == []


def test_executable_outside_the_allowlist_is_refused(run_probe: ProbeRun, script: Path) -> None:
    code, result, _ = run_probe("command", {"argv": ["true"]}, env=enabled(f"{script.parent}/*"))
    assert code == 2
    assert "argv[0]" in result["error"] and "matches no glob" in result["error"]
    assert result["cases"] == []


def test_runs_allowlisted_command_without_credentials(run_probe: ProbeRun, script: Path) -> None:
    secrets = {
        "CUPROBE_DATABASE_URL": "postgresql://cuprobe:hunter2@db/cuprobe",
        "AWS_SECRET_ACCESS_KEY": "x",
        "GITHUB_TOKEN": "ghp_x",
        "CACHE_URL": "redis://:hunter2@cache:6379/0",
        "CUDA_API_KEY": "cuda-key",
        "LD_AUTH_TOKEN": "ld-token",
        "NVIDIA_TOKEN": "nv-token",
        "PLAIN_SETTING": "not on the allowlist",
        "CUDA_VISIBLE_DEVICES": "0",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
    }
    code, result, _ = run_probe(
        "command",
        {"argv": [str(script), "3"], "expect_exit": 3},
        env=enabled(f"{script.parent}/*", **secrets),
    )
    assert code == 0 and result["complete"]
    case = result["cases"][0]
    shown = case["observations"]["stdout_tail"]
    for value in ("hunter2", "ghp_x", "AWS_SECRET", "cuda-key", "ld-token", "nv-token", "PLAIN_SETTING"):
        assert value not in shown
    assert "CUDA_VISIBLE_DEVICES=0" in shown and "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in shown
    assert "CUPROBE_COMMAND_ALLOWLIST" not in shown
    secret_names = {"CUPROBE_DATABASE_URL", "GITHUB_TOKEN", "CACHE_URL", "CUDA_API_KEY", "LD_AUTH_TOKEN"}
    assert secret_names | {"NVIDIA_TOKEN"} <= set(case["observations"]["env_dropped"])
    assert case["observations"]["exit_code"] == 3 and case["violations"] == []


def test_unexpected_exit_status_is_a_violation(run_probe: ProbeRun, script: Path) -> None:
    code, result, _ = run_probe("command", {"argv": [str(script), "5"]}, env=enabled(str(script)))
    assert code == 0
    assert result["cases"][0]["violations"] == ["command exited 5, expected 0"]


def test_wall_clock_limit_kills_the_whole_process_group(run_probe: ProbeRun, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    hang = tmp_path / "hang"
    hang.write_text(f"#!/bin/sh\nsleep 60 &\necho $! > {pidfile}\nwait\n")
    hang.chmod(0o755)
    started = time.monotonic()
    code, result, _ = run_probe("command", {"argv": [str(hang)], "timeout_s": 1}, env=enabled(str(hang)))
    assert time.monotonic() - started < 30
    assert code == 1 and "wall-clock limit of 1 s" in result["error"] and not result["complete"]
    assert not running(int(pidfile.read_text()))


def running(pid: int) -> bool:
    """Whether `pid` is alive (a zombie left for a non-reaping init is dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_bad_parameter_exits_2_naming_it(run_probe: ProbeRun) -> None:
    code, result, _ = run_probe("command", {"argv": []}, env=enabled("/*"))
    assert code == 2 and "argv" in result["error"]


def test_child_env_rules() -> None:
    env, dropped = child_env(
        {
            "LD_PRELOAD": "libsanitizer.so",  # set by compute-sanitizer in the process it instruments
            "NV_SANITIZER_INJECTION_PORT_BASE": "1",
            "CUDA_INJECTION64_PATH": "/opt/sanitizer/libinjection.so",
            "HOME": "/root",
            "MY_PASSWORD": "p",
            "BROKER_URL": "redis://localhost",
            "CUDA_API_KEY": "k",
            "LD_AUTH_TOKEN": "t",
            "NVIDIA_TOKEN": "t",
            "CUPROBE_COMMAND_ALLOWLIST": "/bin/*",
        }
    )
    assert set(env) == {"LD_PRELOAD", "NV_SANITIZER_INJECTION_PORT_BASE", "CUDA_INJECTION64_PATH", "HOME"}
    assert dropped == sorted(
        ["BROKER_URL", "CUDA_API_KEY", "CUPROBE_COMMAND_ALLOWLIST", "LD_AUTH_TOKEN", "MY_PASSWORD", "NVIDIA_TOKEN"]
    )
    assert allowed("/opt/tests/bin/run", f"/usr/bin/*{os.pathsep}/opt/tests/*/*")
    assert not allowed("/opt/other/run", "/opt/tests/*")
    assert not allowed("/opt/tests/run", "")


def test_allowlist_globs_stay_within_one_path_segment() -> None:
    assert allowed("/opt/tests/run", "/opt/tests/*")  # positive control
    assert not allowed("/opt/tests/bin/run", "/opt/tests/*")
    assert not allowed("/opt/tests/../../usr/bin/id", "/opt/tests/*")
    assert allowed("/opt/tests/run-7", "/opt/tests/run-[0-9]")
    assert not allowed("/opt/tests/run-x", "/opt/tests/run-[0-9]")


@pytest.mark.parametrize("program", ["env", "sh", "bash", "python3", "python3.12", "perl", "node", "xargs"])
def test_interpreters_run_only_when_listed_by_exact_path(program: str) -> None:
    path = f"/usr/bin/{program}"
    assert not allowed(path, "/usr/bin/*")
    assert not allowed(path, "/usr/*/*")
    assert allowed(path, f"/opt/x{os.pathsep}{path}")


def test_an_allowlisted_glob_does_not_let_env_run_anything(run_probe: ProbeRun) -> None:
    env_path = str(Path(shutil.which("env") or "/usr/bin/env").resolve())
    code, result, _ = run_probe(
        "command", {"argv": ["env", "id"]}, env=enabled(str(Path(env_path).parent) + "/*")
    )
    assert code == 2 and "exact path" in result["error"] and result["cases"] == []


def test_child_keeps_every_variable_the_sanitizer_injected_on_the_h200() -> None:
    """The environment a command's child saw under compute-sanitizer 2025.3 (memcheck, started from an empty
    environment, so every variable but PATH and PWD is the sanitizer's own): all of them reach the child."""
    from tests.conftest import CAPTURES

    lines = (CAPTURES / "2025.3.1.0" / "env-child-under-memcheck.txt").read_text().splitlines()
    captured = {line.split("=", 1)[0]: line.split("=", 1)[1] for line in lines if re.match(r"^[A-Za-z_][\w-]*=", line)}
    assert {"NV_SANITIZER_INJECTION_PORT_BASE", "NVTX_INJECTION64_PATH"} <= set(captured)  # the capture is real
    env, dropped = child_env(captured)
    assert dropped == [] and set(env) == set(captured)


def test_a_virtual_environments_python_runs_as_itself(run_probe: ProbeRun, tmp_path: Path) -> None:
    """Its bin/python is a symlink to the base interpreter: run by the real path it would not see the environment's
    packages (on the GPU box every pytest test exited 1, `No module named pytest`). The allowlist still judges the
    real path."""
    import venv

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
    python = env_dir / "bin" / "python"
    assert python.is_symlink()
    code, result, _ = run_probe(
        "command",
        {"argv": [str(python), "-c", "import sys; print('prefix=' + sys.prefix)"]},
        env=enabled(str(python.resolve())),
    )
    assert code == 0, result
    case = result["cases"][0]
    assert case["violations"] == [] and f"prefix={env_dir}" in case["observations"]["stdout_tail"]
    assert case["params"]["executable"] == str(python.resolve())


@pytest.mark.parametrize(
    "params",
    [
        {"env_modifications": ["LD_PRELOAD=set:/tmp/evil.so"]},
        {"env_modifications": ["LD_LIBRARY_PATH=path_list_prepend:/tmp/evil"]},
        {"env_modifications": ["CUPROBE_COMMAND_TRUSTED=set:1"]},
        {"env": {"LD_PRELOAD": "/tmp/evil.so"}},
    ],
)
def test_a_service_job_cannot_set_the_loaders_variables(
    run_probe: ProbeRun, script: Path, params: dict[str, object]
) -> None:
    """ctest's ENVIRONMENT and ENVIRONMENT_MODIFICATION reach the command as `env` and `env_modifications`: neither
    may name LD_* or CUPROBE_*, or a job runs a library of its choice inside any allowlisted program."""
    code, result, _ = run_probe("command", {"argv": [str(script)], **params}, env=enabled(str(script)))
    assert code == 2 and result["cases"] == []
    assert "may not set" in result["error"] and ("LD_" in result["error"] or "CUPROBE_" in result["error"])


def test_the_users_own_run_keeps_its_loader_variables(run_probe: ProbeRun, script: Path) -> None:
    """cuprobe exec and gate --local run the user's own command for them: its LD_* settings are theirs to make."""
    code, result, _ = run_probe(
        "command",
        {"argv": [str(script)], "env_modifications": ["LD_LIBRARY_PATH=path_list_append:/opt/mine"]},
        env={"CUPROBE_COMMAND_TRUSTED": "1", "LD_LIBRARY_PATH": "/opt/base"},
    )
    assert code == 0 and result["cases"][0]["violations"] == []
    assert "LD_LIBRARY_PATH=/opt/base:/opt/mine" in result["cases"][0]["observations"]["stdout_tail"]


@pytest.mark.parametrize(
    "program", ["chrt", "choom", "taskset", "flock", "unshare", "cmake", "ctest", "ld-linux-x86-64.so.2"]
)
def test_launchers_run_only_when_listed_by_exact_path(program: str) -> None:
    """`chrt -o 0 python3 -c ...` through an allowlisted /usr/bin/c* ran the Python the allowlist refuses by name."""
    path = f"/usr/bin/{program}"
    assert not allowed(path, "/usr/bin/*") and not allowed(path, "/usr/bin/c*")
    assert allowed(path, path)
    assert allowed("/usr/bin/cuobjdump", "/usr/bin/c*")  # an ordinary program still matches the glob
