"""Which API the service commands ask: --url, CUPROBE_API_URL, the running `cuprobe up` of the data directory, the
default; a `cuprobe up` that died without cleaning up is not asked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cuprobe.service.cli.api_url import SERVING_FILE, api_url, forget_serving, record_serving, serving
from cuprobe.service.config import Settings


def test_the_running_up_of_the_data_directory_is_asked(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert api_url(None, settings) == "http://127.0.0.1:8000"
    record_serving(tmp_path, "http://127.0.0.1:8765")
    assert api_url(None, settings) == "http://127.0.0.1:8765"
    assert api_url("http://elsewhere:1", settings) == "http://elsewhere:1"
    assert api_url(None, Settings(data_dir=tmp_path, api_url="http://set:2")) == "http://set:2"
    assert api_url(None, Settings(data_dir=tmp_path / "other")) == "http://127.0.0.1:8000"
    forget_serving(tmp_path)
    assert not (tmp_path / SERVING_FILE).exists() and serving(tmp_path) is None


def test_a_note_left_by_a_dead_up_is_ignored(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / SERVING_FILE).write_text(json.dumps({"url": "http://127.0.0.1:8765", "pid": int(gone.stdout)}))
    assert serving(tmp_path) is None
    (tmp_path / SERVING_FILE).write_text("not json")
    assert serving(tmp_path) is None


def test_another_ups_note_is_not_removed(tmp_path: Path) -> None:
    (tmp_path / SERVING_FILE).write_text(json.dumps({"url": "http://127.0.0.1:1", "pid": 1}))
    forget_serving(tmp_path)  # pid 1 wrote it, not this process
    assert (tmp_path / SERVING_FILE).exists()
