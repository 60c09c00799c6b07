"""A removed setting still set is refused at the start of every entry point, naming what replaced it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cuprobe.service.api import create_app
from cuprobe.service.config import Settings, get_settings
from cuprobe.service.removed_settings import REMOVED, RemovedSetting

ROOT = Path(__file__).resolve().parents[2]
OLD, SAID = "CUPROBE_CONFIRM_SHARED", "a sweep's batches of one grid always share one set of re-runs"


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("CUPROBE_")}
    return subprocess.run(
        [sys.executable, *args], env=clean | env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_command_line_refuses_a_removed_setting_before_any_command(tmp_path: Path) -> None:
    done = _run("-m", "cuprobe", "probes", **{OLD: "0", "CUPROBE_DATA_DIR": str(tmp_path)})
    assert done.returncode == 2, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert f"{OLD} (replaced by nothing: {SAID})" in said
    assert done.stdout == ""
    # the same command without it runs
    assert _run("-m", "cuprobe", "probes", CUPROBE_DATA_DIR=str(tmp_path)).returncode == 0


def test_a_celery_worker_started_by_itself_refuses_it() -> None:
    done = _run("-c", "import cuprobe.tasks.app", CUPROBE_WORKER_TTL_S="30")
    assert done.returncode != 0
    said = " ".join(done.stderr.split())
    assert "CUPROBE_WORKER_TTL_S (replaced by CUPROBE_WORKER_BEAT_S: a worker's registry heartbeat" in said


def test_the_api_refuses_it_even_with_settings_of_its_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("cuprobe_task_time_limit_s", "75")  # read as the settings read names: in any case
    with pytest.raises(RemovedSetting, match="CUPROBE_TASK_TIME_LIMIT_S \\(replaced by CUPROBE_TASK_SOFT_TIME_LIMIT_S"):
        create_app(Settings(data_dir=tmp_path), reconciler=False)


def test_settings_read_from_the_environment_refuse_every_removed_name(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in REMOVED:
        monkeypatch.setenv(name, "1")
    with pytest.raises(RemovedSetting) as refused:
        get_settings()
    assert all(name in str(refused.value) for name in REMOVED)


def test_no_removed_name_is_a_setting_again() -> None:
    fields = {f"CUPROBE_{name.upper()}" for name in Settings.model_fields}
    assert not fields & set(REMOVED)
