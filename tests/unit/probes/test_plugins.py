"""Plug-in probes: a separate package registering under `cuprobe.probes` is discovered and runnable."""

from __future__ import annotations

import importlib
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuprobe.probes import registry
from tests.unit.probes.conftest import ROOT, ProbeRun

PLUGIN = ROOT / "tests" / "plugin_example"


def install_dist_info(site: Path, entry_points: str) -> None:
    """Lay out the plug-in as an installed distribution: its package and a dist-info with entry points."""
    dist = site / "cuprobe_plugin_example-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cuprobe-plugin-example\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text(entry_points)
    (site / "cuprobe_plugin_example").symlink_to(PLUGIN / "src" / "cuprobe_plugin_example")


def declared_entry_points() -> str:
    """The plug-in's entry points as its pyproject.toml declares them, in entry_points.txt form."""
    declared = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]["entry-points"]
    return "".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) for group, eps in declared.items()
    )


@pytest.fixture
def plugin_site(tmp_path: Path) -> Iterator[Path]:
    site = tmp_path / "site"
    install_dist_info(site, declared_entry_points())
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    yield site
    sys.path.remove(str(site))
    sys.modules.pop("cuprobe_plugin_example.probe", None)
    sys.modules.pop("cuprobe_plugin_example", None)


def test_registry_discovers_the_plugin(plugin_site: Path) -> None:
    assert registry.available()["example-sum"] == "cuprobe_plugin_example.probe:ExampleSum"
    probe = registry.get("example-sum")
    assert probe.name == "example-sum" and not probe.needs_gpu


def test_plugin_runs_through_python_m_probes(plugin_site: Path, run_probe: ProbeRun) -> None:
    code, result, _ = run_probe("example-sum", {"n": 10}, env={"PYTHONPATH": f"{ROOT}:{plugin_site}"})
    assert code == 0 and result["complete"]
    assert result["cases"][0]["observations"]["fsum"] == 1.0
    code, result, _ = run_probe("example-sum", {"n": 0}, env={"PYTHONPATH": f"{ROOT}:{plugin_site}"})
    assert code == 2 and "n" in result["error"]


def test_without_the_plugin_the_name_is_unknown(run_probe: ProbeRun) -> None:
    assert "example-sum" not in registry.available()
    code, result, _ = run_probe("example-sum", {})
    assert code == 2 and "unknown probe 'example-sum'" in result["error"]


def test_a_plugin_cannot_shadow_a_builtin(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_dist_info(site, "[cuprobe.probes]\nnarrow-matmul = cuprobe_plugin_example.probe:ExampleSum\n")
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    try:
        assert registry.available()["narrow-matmul"] == "cuprobe.probes.narrow_matmul:NarrowMatmul"
    finally:
        sys.path.remove(str(site))
