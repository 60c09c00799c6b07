"""One settings object per environment: built once, rebuilt when a CUPROBE_* variable changes."""

from __future__ import annotations

import pytest

from cuprobe.service.config import get_settings


def test_get_settings_is_cached_and_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUPROBE_TIMEOUT_S", "12")
    first = get_settings()
    assert first.timeout_s == 12 and get_settings() is first
    monkeypatch.setenv("CUPROBE_TIMEOUT_S", "34")
    assert get_settings().timeout_s == 34
