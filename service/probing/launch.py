"""What every probe process gets: its environment, and reading back the result.json it wrote."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import ValidationError

from probes.contract import ProbeResult, Tool
from service.config import Settings
from service.probing.environment import PROJECT_ROOT

EXTENSION_DIR_ENV = "CUPROBE_EXTENSION_DIR"  # where probes cache built extensions (kernels/extension.py)
# What the command probe reads to run as the local user, unrestricted (cuprobe exec, gate --local).
COMMAND_TRUSTED_ENV = "CUPROBE_COMMAND_TRUSTED"


def probe_env(tool: Tool, settings: Settings | None = None, trusted: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != COMMAND_TRUSTED_ENV}
    env.setdefault(EXTENSION_DIR_ENV, str(((settings or Settings()).data_dir / "extensions").resolve()))
    if trusted:
        env.update({COMMAND_TRUSTED_ENV: "1", "CUPROBE_COMMAND_ENABLED": "1"})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env["CUPROBE_TOOL"] = tool.value
    env["CUPROBE_CALLER_CWD"] = os.getcwd()  # probes run from the project root; replay runs the caller's program
    if tool in (Tool.INITCHECK, Tool.MEMCHECK):
        env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"  # a cached block looks written and in bounds
    return env


def read_probe_result(path: Path) -> tuple[ProbeResult | None, str | None]:
    try:
        return ProbeResult.model_validate_json(path.read_bytes()), None
    except FileNotFoundError:
        return None, "the probe wrote no result.json"
    except (OSError, ValidationError, ValueError) as exc:
        return None, f"result.json unreadable: {str(exc)[:300]}"
