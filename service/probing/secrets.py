"""Keeping the worker's secrets out of probes and stored results: the probe's environment and a scrub of text."""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from cuprobe import IMPORT_ROOT, internal_env
from cuprobe.contract import Tool
from cuprobe.kernels.poison_alloc import cache_dir
from cuprobe.probes.allowed_env import SECRET_NAME, allowlisted
from cuprobe.probes.pytest_run import ADDED_PYTHONPATH_ENV
from cuprobe.service.config import Settings
from cuprobe.service.models import RunResult

REDACTED = "[redacted by cuprobe]"
# What the command probe reads to run as the local user, unrestricted (cuprobe exec, gate --local).
COMMAND_TRUSTED_ENV = internal_env.COMMAND_TRUSTED
EXTENSION_DIR_ENV = internal_env.EXTENSION_DIR
# Shorter values are too likely to occur by chance ("1", "true") to be scrubbed from output.
MIN_SECRET_LEN = 6


def probe_environment(
    tool: Tool, settings: Settings, *, trusted: bool = False, source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """What a probe process runs with: for a service job the allowlist (probes.allowed_env), never the worker's
    secrets; for a trusted local run (cuprobe run/exec, gate --local) the user's own environment; plus what
    cuprobe sets for it."""
    source = os.environ if source is None else source
    if trusted:
        env = {k: v for k, v in source.items() if k != COMMAND_TRUSTED_ENV}
        env.update({COMMAND_TRUSTED_ENV: "1", "CUPROBE_COMMAND_ENABLED": "1"})
    else:
        env, _dropped = allowlisted(source, settings.probe_env_pass)
        if settings.command_enabled:  # the probe reads the switch itself; the setting may have come by its old name
            env["CUPROBE_COMMAND_ENABLED"] = "1"
    env[EXTENSION_DIR_ENV] = source.get(EXTENSION_DIR_ENV) or str((settings.data_dir / "extensions").resolve())
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(IMPORT_ROOT), env.get("PYTHONPATH")]))
    env[ADDED_PYTHONPATH_ENV] = str(IMPORT_ROOT)  # a command probe takes it off again for the user's program
    env["PYTHONUNBUFFERED"] = "1"
    env[internal_env.TOOL] = tool.value
    env[internal_env.CALLER_CWD] = os.getcwd()  # probes run from the project root; replay runs the caller's program
    if tool in (Tool.INITCHECK, Tool.MEMCHECK):
        env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"  # a cached block looks written and in bounds
    # Probe processes keep their bytecode in cuprobe's cache even where PYTHONDONTWRITEBYTECODE is set (container
    # images often set it): every process would otherwise compile torch again, 2.9 s of a 6.3 s bare re-run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("PYTHONPYCACHEPREFIX", str(pycache_dir(source)))
    return env


def pycache_dir(source: Mapping[str, str]) -> Path:
    """Where probe processes keep Python's bytecode (probe_environment). cuprobe starts many short Python
    processes (a run, its spares, four bare re-runs each); where no bytecode can be read or written beside the
    sources (PYTHONDONTWRITEBYTECODE=1, a site-packages installed with --no-compile or read-only), each of them
    compiles torch from source again: about 3 s of CPU a process on the H200 box (docs/sweep.md). With
    PYTHONPYCACHEPREFIX they compile it once, into cuprobe's cache, and leave the user's folders alone."""
    return cache_dir(source) / "pycache"


def _url_password(value: str) -> str | None:
    try:
        password = urlsplit(value).password
    except ValueError:
        return None
    return unquote(password) if password else None


def secret_values(settings: Settings, source: Mapping[str, str] | None = None) -> list[str]:
    """Values that must never appear in a stored result: the configured token and URLs (with their passwords),
    and every variable of this process whose name says it holds a credential; longest first."""
    source = os.environ if source is None else source
    found = {settings.api_token, settings.database_url, settings.broker_url, settings.result_backend_url}
    found |= {v for k, v in source.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET_LEN}
    found |= {_url_password(v) for v in list(found) + list(source.values()) if v and "://" in v}
    return sorted((v for v in found if v and len(v) >= 4), key=len, reverse=True)


def scrub(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def _scrub_value(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, list):
        return [_scrub_value(item, secrets) for item in value]
    if isinstance(value, dict):
        return {scrub(str(k), secrets): _scrub_value(v, secrets) for k, v in value.items()}
    return value


def scrub_result(result: RunResult, secrets: list[str]) -> RunResult:
    """`result` with every secret value replaced in every string it holds (defence in depth: the probe never
    had them, but a command may find them elsewhere and print them)."""
    if not secrets:
        return result
    return RunResult.model_validate(_scrub_value(result.model_dump(mode="json"), secrets))


PR_SET_DUMPABLE = 4  # <linux/prctl.h>


def not_dumpable() -> bool:
    """Mark this process non-dumpable (prctl PR_SET_DUMPABLE 0), so that another process of the same user (a job's
    command) cannot read its /proc/PID/environ, memory or fds, nor attach a debugger: the API and worker processes
    hold the token and the store and broker URLs. Processes forked from it inherit the mark; a program it execs
    does not. Returns whether the mark is set (False off Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
