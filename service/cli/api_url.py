"""Which API the service commands ask: --url or CUPROBE_API_URL, else the `cuprobe up` serving this data directory
(whatever --port it was given), else the default."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from cuprobe.service.config import Settings

# Written by `cuprobe up` into its data directory while it serves; removed when it stops.
SERVING_FILE = "serving.json"


def record_serving(data_dir: Path, url: str) -> Path:
    """Note that this process serves the API at `url` for `data_dir`; returns the file written."""
    path = data_dir / SERVING_FILE
    data_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"url": url, "pid": os.getpid()}))
    return path


def forget_serving(data_dir: Path) -> None:
    """Remove the note of record_serving, when this process wrote it (a later `cuprobe up` may have replaced it)."""
    path = data_dir / SERVING_FILE
    with contextlib.suppress(OSError, ValueError):
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()


def serving(data_dir: Path) -> str | None:
    """The URL of the `cuprobe up` that serves `data_dir`, or None when none runs."""
    try:
        said = json.loads((data_dir / SERVING_FILE).read_text())
        url, pid = str(said["url"]), int(said["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # it was killed before it could remove the note
    except PermissionError:
        pass  # alive, another user's
    return url


def api_url(given: str | None, settings: Settings) -> str:
    """The URL to ask: `given` (--url), a CUPROBE_API_URL setting, a running `cuprobe up`'s, the default."""
    if given:
        return given
    if "api_url" in settings.model_fields_set:
        return settings.api_url
    return serving(settings.data_dir) or settings.api_url
