"""A user's project as the gate meets it: its own interpreter, with pytest and nothing of cuprobe's (no pydantic,
no cuprobe), and a layout with its own `probes` and `kernels` packages under src/."""

from __future__ import annotations

import re
import textwrap
import venv
from importlib.metadata import Distribution, distribution
from pathlib import Path

from packaging.requirements import Requirement


def _needed(name: str, seen: dict[str, Distribution]) -> None:
    dist = distribution(name)
    key = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
    if key in seen:
        return
    seen[key] = dist
    for line in dist.requires or []:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            _needed(requirement.name, seen)


def bare_python(root: Path) -> Path:
    """A virtual environment at `root` holding pytest and its own requirements only (linked from this one)."""
    venv.create(root, with_pip=False, symlinks=True)
    site = next(root.glob("lib/python*/site-packages"))
    seen: dict[str, Distribution] = {}
    _needed("pytest", seen)
    for dist in seen.values():
        base = Path(str(dist.locate_file("")))
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            if not (site / top).exists() and (base / top).exists():
                (site / top).symlink_to(base / top)
    return root / "bin" / "python"


def project(root: Path) -> Path:
    """A src-layout project whose tests import its own `probes` and `kernels` packages (so PYTHONPATH must say
    src and the project root) and a file of three tests: two pass, one fails."""
    (root / "src" / "probes").mkdir(parents=True)
    (root / "src" / "probes" / "__init__.py").write_text("SCALE = 2\n")
    (root / "kernels").mkdir()
    (root / "kernels" / "__init__.py").write_text("def double(x):\n    return x * 2\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_ops.py").write_text(
        textwrap.dedent(
            """
            import kernels
            import probes

            def test_double():
                assert kernels.double(3) == 6

            def test_scale():
                assert probes.SCALE == 2

            def test_wrong():
                assert kernels.double(2) == 5
            """
        )
    )
    (root / "tests" / "test_one.py").write_text("import probes\n\n\ndef test_alone():\n    assert probes.SCALE\n")
    return root
