"""docs/configuration.md is what docs/tools/configuration.py renders from Settings: a setting added, removed or
re-described without regenerating the page fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from cuprobe.service.config import Settings
from cuprobe.service.removed_settings import REMOVED

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "configuration.md"


def _render() -> str:
    spec = importlib.util.spec_from_file_location("configuration_doc", ROOT / "docs" / "tools" / "configuration.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rendered: str = module.render()
    return rendered


def test_the_page_is_the_rendering_of_the_settings() -> None:
    assert PAGE.read_text(encoding="utf-8") == _render(), (
        "docs/configuration.md is out of date: python docs/tools/configuration.py > docs/configuration.md"
    )


def test_every_setting_is_on_the_page_with_a_meaning() -> None:
    rows = {line.split("|")[1].strip(" `"): line for line in _render().splitlines() if line.startswith("| `CUPROBE_")}
    for name in Settings.model_fields:
        row = rows[f"CUPROBE_{name.upper()}"]
        assert not row.rstrip().endswith("| - |"), f"{name} has no comment in service/config.py"
    assert set(REMOVED) <= set(rows)


def test_the_readme_points_at_the_page() -> None:
    assert "docs/configuration.md" in (ROOT / "README.md").read_text(encoding="utf-8")
