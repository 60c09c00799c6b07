"""What cuprobe's pytest plugin loads into a user's test process imports only the standard library, pytest and
torch (the user's interpreter has none of cuprobe's dependencies, and cuprobe itself is not importable there), and
the variable names those files spell out are the ones cuprobe/internal_env.py hands them."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

from cuprobe import internal_env

PLUGIN = Path(__file__).resolve().parents[2] / "probes" / "inject" / "_cuprobe_pytest.py"
ALLOWED = {"pytest", "torch", "filelock"}  # filelock: a requirement of torch, used only where torch is


def _plugin() -> object:
    spec = importlib.util.spec_from_file_location("_cuprobe_pytest_under_test", PLUGIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names - {"__future__"}


def test_every_file_loaded_into_a_test_process_imports_only_the_standard_library_pytest_and_torch() -> None:
    sources = [PLUGIN, *_plugin().SOURCES.values()]  # type: ignore[attr-defined]
    assert len(sources) >= 5
    for path in sources:
        foreign = {name for name in _imports(path) if name not in sys.stdlib_module_names} - ALLOWED
        assert not foreign, f"{path} imports {sorted(foreign)}, which a user's interpreter may not have"


def test_the_names_those_files_spell_out_are_internal_envs() -> None:
    loaded = _plugin()
    state = loaded._load("_cuprobe_allocator_state")  # type: ignore[attr-defined]
    assert state.CALL_LOG_ENV == internal_env.NVTX_CALL_LOG
    assert loaded.ALLOCATOR_ENV == internal_env.ALLOCATOR  # type: ignore[attr-defined]
    assert loaded.REPORT_ENV == internal_env.PYTEST_REPORT  # type: ignore[attr-defined]
    extension = loaded._load("_cuprobe_extension")  # type: ignore[attr-defined]
    assert f'"{internal_env.EXTENSION_DIR}"' in Path(extension.__file__).read_text()
