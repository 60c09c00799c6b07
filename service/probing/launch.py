"""Reading back the result.json a probe process wrote (only a regular file: a planted symlink is not followed)."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from cuprobe.contract import ProbeResult
from cuprobe.service.db.artifacts import read_regular


def read_probe_result(path: Path) -> tuple[ProbeResult | None, str | None]:
    try:
        return ProbeResult.model_validate_json(read_regular(path)), None
    except FileNotFoundError:
        return None, "the probe wrote no result.json"
    except (OSError, ValidationError, ValueError) as exc:
        return None, f"result.json unreadable: {str(exc)[:300]}"
