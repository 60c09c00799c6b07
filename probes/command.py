"""command: an operator-approved executable run under the sanitizer; off unless enabled, allowlisted."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from probes.base import Probe, ProbeRefused, ProbeUnavailable, Recorder
from probes.contract import Tool

ENABLED_ENV = "CUPROBE_COMMAND_ENABLED"
# Exact paths or globs over the resolved path (wildcards stay within one segment), os.pathsep-separated.
ALLOWLIST_ENV = "CUPROBE_COMMAND_ALLOWLIST"
OUTPUT_TAIL = 64 * 1024
# Names of variables that carry the service's credentials.
SECRET_NAME = re.compile(
    r"^(CUPROBE_|AWS_|AZURE_|GOOGLE_|GCP_|CELERY_)|TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|PRIVATE_?KEY|AUTH|"
    r"SESSION|COOKIE|^(DATABASE|BROKER|REDIS|RESULT_BACKEND)_URL$",
    re.IGNORECASE,
)
URL_WITH_PASSWORD = re.compile(r"://[^/\s:@]*:[^/\s@]+@")
# The sanitizer follows children through these (injection library, preload): never dropped by name.
PASS_THROUGH = ("NV_", "NVIDIA_", "CUDA_", "COMPUTE_SANITIZER", "LD_")


class CommandParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    argv: list[str] = Field(min_length=1, description="the executable and its arguments")
    timeout_s: float = Field(
        600, gt=0, le=24 * 3600, description="wall-clock limit; the process group is killed"
    )
    cwd: str | None = Field(None, description="working directory (default: the probe's)")
    expect_exit: int | None = Field(0, description="exit status the command must end with; null: any")


def scrubbed_env(env: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """`env` without credentials (by name, or URLs holding a password); returns it and the names dropped."""
    dropped = sorted(
        k for k, v in env.items()
        if (SECRET_NAME.search(k) and not k.startswith(PASS_THROUGH)) or URL_WITH_PASSWORD.search(v)
    )
    return {k: v for k, v in env.items() if k not in dropped}, dropped


# Programs that run whatever their arguments say (shells, interpreters, launchers): allowlisting one allows
# everything, so they run only when the allowlist names their exact path, never through a glob.
INTERPRETER = re.compile(
    r"^(env|sh|bash|dash|zsh|ksh|mksh|csh|tcsh|fish|busybox|python[0-9.]*|pypy[0-9.]*|perl[0-9.]*|ruby[0-9.]*|"
    r"node|nodejs|deno|bun|php[0-9.]*|lua[0-9.]*|luajit|tclsh[0-9.]*|wish[0-9.]*|R|Rscript|julia|java|"
    r"awk|gawk|mawk|nawk|xargs|nohup|timeout|nice|ionice|setsid|stdbuf|chroot|sudo|su|doas|strace|ltrace|"
    r"gdb|valgrind|find|make|ssh|compute-sanitizer)$"
)
GLOB_CHARS = frozenset("*?[")


def glob_regex(glob: str) -> re.Pattern[str]:
    """`glob` as a regex whose `*`, `?` and `[...]` match within one path segment (never across `/`)."""
    out, i = [], 0
    while i < len(glob):
        char = glob[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            out.append(f"[{'^' if negate else ''}{body.replace(chr(92), chr(92) * 2).replace('/', '')}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out) + r"\Z")


def allowed(executable: str, allowlist: str) -> bool:
    """Whether the resolved executable path matches an allowlist entry: exact for an interpreter-like program,
    else a glob whose wildcards stay within one path segment."""
    entries = [entry for entry in allowlist.split(os.pathsep) if entry]
    if executable in entries:
        return True
    if INTERPRETER.match(Path(executable).name):
        return False
    return any(glob_regex(entry).match(executable) for entry in entries if GLOB_CHARS & set(entry))


def resolve(program: str) -> str:
    """The executable's real absolute path, as the allowlist sees it."""
    found = shutil.which(program)
    if found is None:
        raise ProbeRefused(f"argv[0]: {program!r} is not an executable file found on PATH")
    return str(Path(found).resolve())


class Command(Probe):
    name = "command"
    summary = "Runs an allowlisted executable under the sanitizer (off unless CUPROBE_COMMAND_ENABLED=1)"
    Params = CommandParams
    tools = (Tool.MEMCHECK, Tool.INITCHECK, Tool.RACECHECK, Tool.SYNCCHECK, Tool.NONE)

    def run(self, params: BaseModel, tool: Tool, recorder: Recorder) -> None:
        assert isinstance(params, CommandParams)
        if os.environ.get(ENABLED_ENV) != "1":
            raise ProbeUnavailable(
                f"the command probe is off on this worker: the operator enables it with "
                f"{ENABLED_ENV}=1 and an allowlist of path globs in {ALLOWLIST_ENV}"
            )
        executable = resolve(params.argv[0])
        if not allowed(executable, os.environ.get(ALLOWLIST_ENV, "")):
            exact = " (an interpreter-like program: allowed only by its exact path)" if INTERPRETER.match(
                Path(executable).name
            ) else ""
            raise ProbeRefused(f"argv[0]: {executable} matches no glob in {ALLOWLIST_ENV}{exact}")
        env, dropped = scrubbed_env(dict(os.environ))
        case = recorder.case(
            "command", self.expectation(params, tool), argv=params.argv, executable=executable
        )
        case.observations["env_dropped"] = dropped
        proc = subprocess.Popen(
            [executable, *params.argv[1:]],
            cwd=params.cwd,
            env=env,
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            out, err = proc.communicate(timeout=params.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            case.observations.update(timed_out=True, stdout_tail=_tail(out), stderr_tail=_tail(err))
            raise RuntimeError(
                f"command exceeded its wall-clock limit of {params.timeout_s:g} s; "
                "its process group was killed"
            ) from None
        case.observations.update(
            exit_code=proc.returncode, timed_out=False, stdout_tail=_tail(out), stderr_tail=_tail(err)
        )
        if params.expect_exit is not None and proc.returncode != params.expect_exit:
            case.violations.append(f"command exited {proc.returncode}, expected {params.expect_exit}")


def _tail(data: bytes) -> str:
    return data[-OUTPUT_TAIL:].decode("utf-8", errors="replace")
