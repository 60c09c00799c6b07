"""The torch allocator option: validation, per-tool defaults, --nvtx yes, the fallback when nothing can build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.kernels import extension
from cuprobe.probes import allocator, allocator_state
from cuprobe.probes.allocator import NO_CACHING, parse_allocator
from cuprobe.probes.pytest_run import plugin_env
from cuprobe.service.config import Settings
from cuprobe.service.models import ProbeRequest
from cuprobe.service.probing.admission import BadRequest, admit
from cuprobe.service.probing.runner import run_probe
from tests.conftest import RUNS, VERSIONS
from tests.unit.probes.conftest import ProbeRun
from tests.unit.probing.test_runner_replay import gpu_present, replay

__all__ = ["gpu_present"]  # the fixture, imported for the --nvtx test
TORCH_PROBES = ["narrow-matmul", "bf16-matmul", "determinism", "planted-torch"]


@pytest.fixture
def fresh_allocator(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No allocator set up yet in this process, no caching flag inherited, extensions built under tmp_path."""
    monkeypatch.setattr(allocator_state, "_STATE", None)
    monkeypatch.delenv(NO_CACHING, raising=False)
    monkeypatch.setenv("CUPROBE_EXTENSION_DIR", str(tmp_path / "extensions"))


def test_an_unknown_allocator_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="caching-nvtx, caching, no-caching"):
        parse_allocator("cached")


@pytest.mark.parametrize("probe", TORCH_PROBES)
def test_every_torch_probe_refuses_a_bad_allocator(probe: str) -> None:
    with pytest.raises(BadRequest, match="allocator"):
        admit(probe, None, {"allocator": "pooled"})


@pytest.mark.parametrize("probe", ["narrow-matmul", "bf16-matmul", "planted-torch"])
def test_the_default_is_written_into_the_params_so_the_reproducing_command_says_it(probe: str) -> None:
    sanitized = admit(probe, Tool.MEMCHECK, {}).params
    bare = admit(probe, Tool.NONE, {}).params
    asked = admit(probe, Tool.MEMCHECK, {"allocator": "no-caching"}).params
    assert (sanitized["allocator"], bare["allocator"], asked["allocator"]) == ("caching-nvtx", "caching", "no-caching")


def test_caching_nvtx_passes_nvtx_yes_and_the_allocator_reaches_the_reproducing_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    replay(monkeypatch, RUNS / f"uninit-read-initcheck-{VERSIONS[1]}")
    request = ProbeRequest(probe="planted-torch", tool=Tool.INITCHECK, params={"allocator": "no-caching"})
    plain = run_probe(request, workdir=tmp_path / "a", settings=replay_settings).command
    assert "--nvtx" not in plain
    assert json.loads(plain[plain.index("--params") + 1])["allocator"] == "no-caching"
    # the default under a sanitizer is caching-nvtx: --nvtx yes, and the params name it
    command = run_probe(
        request.model_copy(update={"params": {}}), workdir=tmp_path / "b", settings=replay_settings
    ).command
    nvtx = command.index("--nvtx")
    assert command[nvtx + 1] == "yes" and nvtx < command.index("--")
    assert json.loads(command[command.index("--params") + 1])["allocator"] == "caching-nvtx"


def test_the_extension_does_not_build_against_cpu_torch_and_says_why(tmp_path: Path) -> None:
    with pytest.raises(extension.ExtensionUnavailable) as failed:
        extension.load(tmp_path)
    message = str(failed.value)
    assert "CPU build" in message or "no CUDA toolkit headers" in message
    assert not list(tmp_path.rglob("*.so"))


def test_caching_nvtx_falls_back_to_no_caching_with_the_reason(fresh_allocator: None) -> None:
    import torch

    state = allocator.activate(allocator.prepare("caching-nvtx", Tool.MEMCHECK), torch)
    context = state.context()
    assert context["allocator"] == "no-caching" and context["allocator_requested"] == "caching-nvtx"
    assert context["allocator_fallback"].startswith("caching-nvtx fell back to no-caching: ")
    assert "CPU build" in context["allocator_fallback"] or "CUDA toolkit" in context["allocator_fallback"]
    assert os.environ[NO_CACHING] == "1" and context[NO_CACHING] == "1"


def test_caching_clears_the_flag_the_service_sets_under_memcheck(
    fresh_allocator: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(NO_CACHING, "1")
    state = allocator.prepare("caching", Tool.MEMCHECK)
    assert state.effective == "caching" and NO_CACHING not in os.environ
    with pytest.raises(ValueError, match="after caching was set up"):
        allocator.prepare("no-caching", Tool.MEMCHECK)


def test_a_probe_records_the_allocator_it_was_asked_for(run_probe: ProbeRun) -> None:
    code, result, _ = run_probe("planted-torch", {"allocator": "caching"}, "memcheck", env={NO_CACHING: "1"})
    assert code == 69 and "CUDA device" in result["unavailable"]  # no GPU here: but the setting was made
    assert result["context"]["allocator"] == "caching" and result["context"][NO_CACHING] is None
    code, result, _ = run_probe("planted-torch", {"allocator": "no-caching"}, "memcheck")
    assert result["context"]["allocator"] == "no-caching" and result["context"][NO_CACHING] == "1"
    code, result, _ = run_probe("planted-torch", {}, "memcheck")  # the default under a sanitizer
    assert result["context"]["allocator"] == "caching-nvtx" and result["context"][NO_CACHING] is None


def _pytest_with_plugin(tmp_path: Path, value: str) -> subprocess.CompletedProcess[str]:
    """The user's pytest (this interpreter, which has torch) with cuprobe's plugin merged into its environment."""
    test = tmp_path / "test_user.py"
    test.write_text(
        "import os\n\ndef test_sees_the_flag():\n    print('FLAG', os.environ.get('PYTORCH_NO_CUDA_MEMORY_CACHING'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env = plugin_env(env | {"CUPROBE_EXTENSION_DIR": str(tmp_path / "ext")}, None, tmp_path / "report.jsonl")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-s", str(test), "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env | {"CUPROBE_ALLOCATOR": value},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_pytest_plugin_sets_the_allocator_for_a_users_suite_and_says_so(tmp_path: Path) -> None:
    proc = _pytest_with_plugin(tmp_path, "caching-nvtx")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cuprobe allocator: no-caching, asked for caching-nvtx (caching-nvtx fell back to no-caching:" in proc.stdout
    assert "FLAG 1" in proc.stdout


def test_pytest_plugin_refuses_a_bad_value(tmp_path: Path) -> None:
    proc = _pytest_with_plugin(tmp_path, "sometimes")
    assert proc.returncode == 4 and "CUPROBE_ALLOCATOR" in proc.stderr


@pytest.fixture
def fake_toolkit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """CUDA_HOME with the one header the build looks for, so the build path is reached on any machine."""
    home = tmp_path / "cuda"
    (home / "include" / "nvtx3").mkdir(parents=True)
    (home / "include" / "nvtx3" / "nvToolsExtMem.h").write_text("/* stand-in */\n")
    monkeypatch.setenv("CUDA_HOME", str(home))
    return home


@pytest.mark.timeout(120)
def test_a_build_lock_left_by_a_killed_builder_does_not_hang_the_next_load(tmp_path: Path, fake_toolkit: Path) -> None:
    """torch's build lock is a plain file: a builder killed while holding it (a cancel, a timeout) left every later
    load waiting forever. Only a holder of cuprobe's OS lock can have made it, so one found then is stale."""
    import torch

    folder = extension.build_directory(tmp_path / "ext", torch.__version__)
    folder.mkdir(parents=True)
    (folder / "lock").write_text("")
    with pytest.raises(extension.ExtensionUnavailable):  # this torch cannot build it; what matters is it returns
        extension.load(tmp_path / "ext")
    assert not (folder / "lock").exists()


def test_a_built_library_is_loaded_without_building_or_any_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    import torch

    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "no-toolkit"))  # loading a built library needs no headers
    folder = extension.build_directory(tmp_path / "ext", torch.__version__)
    folder.mkdir(parents=True)
    source = tmp_path / "stub.c"
    source.write_text(
        "int cuprobe_nvtx_attach(const char *p) { return 7; }\n"
        "void cuprobe_nvtx_seed(int a, unsigned long b, unsigned long c) {}\n"
        "void cuprobe_nvtx_counts(unsigned long *o, int n) {}\n"
    )
    library = folder / f"{extension.NAME}.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    (folder / extension.BUILT).write_text(library.name)
    (folder / "lock").write_text("")  # even a stale torch lock is not looked at
    loaded = extension.load(tmp_path / "ext")
    assert loaded.cached and loaded.build_s == 0.0 and loaded.path == library
    assert loaded.lib.cuprobe_nvtx_attach(b"") == 7
