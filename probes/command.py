"""command: an operator-approved executable run under the sanitizer; off unless enabled, allowlisted."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from probes.allocator import ENV, NO_CACHING, Allocator
from probes.base import Probe, ProbeRefused, ProbeUnavailable, Recorder
from probes.contract import Expectation, Tool

ENABLED_ENV = "CUPROBE_COMMAND_ENABLED"
# Set only by cuprobe's local runs (cuprobe exec, gate --local): the user's own command, no allowlist, no scrub.
TRUSTED_ENV = "CUPROBE_COMMAND_TRUSTED"
# Variables a service job's `env` may not set: the loader's and cuprobe's own.
REFUSED_ENV = re.compile(r"^(LD_|CUPROBE_)")
ALLOWLIST_ENV = (
    "CUPROBE_COMMAND_ALLOWLIST"  # path globs (fnmatch over the resolved path), os.pathsep-separated
)
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
    env: dict[str, str] = Field(default_factory=dict, description="variables added to the command's environment")
    case: str = Field(
        "command", min_length=1, max_length=1000, description="the case findings are attributed to (a test's id)"
    )
    expect: str | None = Field(
        None, description="a known defect: the finding kind the tool must report (a positive control)"
    )
    allocator: Allocator | None = Field(
        None,
        description="torch's allocator in the command, for a pytest run: exported as CUPROBE_ALLOCATOR; "
        "caching-nvtx also loads the pytest plugin probes.allocator_plugin (PYTEST_PLUGINS)",
    )


def scrubbed_env(env: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """`env` without credentials (by name, or URLs holding a password); returns it and the names dropped."""
    dropped = sorted(
        k for k, v in env.items()
        if (SECRET_NAME.search(k) and not k.startswith(PASS_THROUGH)) or URL_WITH_PASSWORD.search(v)
    )
    return {k: v for k, v in env.items() if k not in dropped}, dropped


def allocator_env(allocator: Allocator, env: dict[str, str]) -> dict[str, str]:
    """Variables that give a command's torch `allocator` (the pytest plugin does the NVTX part)."""
    out: dict[str, str] = {ENV: allocator}
    if "CUPROBE_EXTENSION_DIR" in os.environ:  # scrubbed with the other CUPROBE_ names; the plugin needs it
        out["CUPROBE_EXTENSION_DIR"] = os.environ["CUPROBE_EXTENSION_DIR"]
    if allocator == "no-caching":
        out[NO_CACHING] = "1"
    else:
        env.pop(NO_CACHING, None)
    if allocator == "caching-nvtx":
        plugins = [p for p in env.get("PYTEST_PLUGINS", "").split(",") if p]
        out["PYTEST_PLUGINS"] = ",".join([*plugins, "probes.allocator_plugin"])
    return out


def allowed(executable: str, allowlist: str) -> bool:
    """Whether the resolved executable path matches one of the allowlist's globs."""
    return any(fnmatch.fnmatchcase(executable, glob) for glob in allowlist.split(os.pathsep) if glob)


def resolve(program: str, cwd: str | None = None) -> str:
    """The executable's real absolute path, as the allowlist sees it (a relative path is taken from `cwd`)."""
    if os.sep in program and not os.path.isabs(program) and cwd:
        program = os.path.join(cwd, program)
    found = shutil.which(program)
    if found is None:
        raise ProbeRefused(f"argv[0]: {program!r} is not an executable file found on PATH")
    return str(Path(found).resolve())


class Command(Probe):
    name = "command"
    summary = "Runs an allowlisted executable under the sanitizer (off unless CUPROBE_COMMAND_ENABLED=1)"
    Params = CommandParams
    tools = (Tool.MEMCHECK, Tool.INITCHECK, Tool.RACECHECK, Tool.SYNCCHECK, Tool.NONE)

    def expectation(self, params: BaseModel, tool: Tool) -> Expectation:
        assert isinstance(params, CommandParams)
        if params.expect and tool is not Tool.NONE:
            return Expectation.positive_control(tool, params.expect)
        return Expectation()

    def run(self, params: BaseModel, tool: Tool, recorder: Recorder) -> None:
        assert isinstance(params, CommandParams)
        trusted = os.environ.get(TRUSTED_ENV) == "1"
        if os.environ.get(ENABLED_ENV) != "1" and not trusted:
            raise ProbeUnavailable(
                f"the command probe is off on this worker: the operator enables it with "
                f"{ENABLED_ENV}=1 and an allowlist of path globs in {ALLOWLIST_ENV}"
            )
        executable = resolve(params.argv[0], params.cwd)
        if not trusted and not allowed(executable, os.environ.get(ALLOWLIST_ENV, "")):
            raise ProbeRefused(f"argv[0]: {executable} matches no glob in {ALLOWLIST_ENV}")
        if not trusted and (refused := sorted(k for k in params.env if REFUSED_ENV.match(k))):
            raise ProbeRefused(f"env: a service job may not set {', '.join(refused)}")
        base = {k: v for k, v in os.environ.items() if k not in (TRUSTED_ENV, ENABLED_ENV)}
        env, dropped = (base, []) if trusted else scrubbed_env(base)
        if params.allocator is not None:
            env.update(allocator_env(params.allocator, env))
        env.update(params.env)
        case = recorder.case(
            params.case, self.expectation(params, tool), argv=params.argv, executable=executable
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
