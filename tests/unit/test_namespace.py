"""cuprobe installs one import package, `cuprobe`: its code never imports the repository's folders by their bare
names, which a user's own `service`, `probes`, `kernels` or `tasks` package would shadow."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BARE = {"service", "probes", "kernels", "tasks"}


def _imported(path: Path) -> list[str]:
    """The top-level names a module's import statements name (not text inside strings: a test's own project)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_no_module_imports_a_folder_by_its_bare_name() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for folder in ("service", "tasks", "probes", "kernels", "tests", "bench", "docs")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for name in _imported(path)
        if name.split(".")[0] in BARE
    ]
    assert offenders == []


def test_a_project_with_its_own_probes_and_kernels_packages_does_not_shadow_cuprobe(tmp_path: Path) -> None:
    for name in ("service", "probes", "kernels", "tasks"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("raise ImportError('the project package, not cuprobe')\n")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import cuprobe.probes.registry as r, cuprobe.service.cli.main; print(len(r.available()))",
        ],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 5


def test_importing_every_module_and_probe_loads_nothing_under_a_bare_name(tmp_path: Path) -> None:
    script = """
import importlib, pkgutil, sys
import cuprobe
from cuprobe.probes import registry
for info in pkgutil.walk_packages(cuprobe.__path__, "cuprobe."):
    if info.name.endswith("__main__") or ".migrations." in info.name:
        continue
    try:
        importlib.import_module(info.name)
    except ImportError as exc:  # a GPU-only dependency (pycuda) missing on this machine
        if not (exc.name or "").startswith(("pycuda", "triton", "pynvml")):
            raise
for name in registry.available():
    registry.get(name)
bare = sorted(m for m in sys.modules if m.split(".")[0] in {"service", "probes", "kernels", "tasks"})
print(bare)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"
