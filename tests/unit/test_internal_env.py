"""Every CUPROBE_* name in the product is a setting, an internal variable named in cuprobe/internal_env.py, or a
removed setting that is refused: none is read from the environment behind the settings' back."""

from __future__ import annotations

import re
from pathlib import Path

from cuprobe.internal_env import INTERNAL
from cuprobe.service.config import ENV_PREFIX, Settings
from cuprobe.service.removed_settings import REMOVED

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"\bCUPROBE_[A-Z0-9_]*[A-Z0-9]\b")


def _product_files() -> list[Path]:
    folders = ("service", "tasks", "probes", "kernels", "cuprobe")
    return sorted(p for d in folders for p in (ROOT / d).rglob("*.py") if p.is_file() and "__pycache__" not in p.parts)


def test_every_name_in_the_product_is_a_setting_an_internal_variable_or_refused() -> None:
    settings = {ENV_PREFIX + name.upper() for name in Settings.model_fields}
    unknown = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in _product_files()
        for name in NAME.findall(path.read_text(encoding="utf-8"))
        if name not in settings | INTERNAL | set(REMOVED)
    }
    assert not unknown, sorted(unknown)


def test_internal_variables_are_not_settings() -> None:
    settings = {ENV_PREFIX + name.upper() for name in Settings.model_fields}
    assert not INTERNAL & settings and not INTERNAL & set(REMOVED)
