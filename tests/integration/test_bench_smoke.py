"""Every benchmark in bench/ at a small size, as CI runs it: each checks its own results (records parsed, findings
equal across parsers and slots, pages answered, jobs neither lost nor duplicated, runs clean as their bare twin),
so a change that breaks one fails here instead of the next time someone measures. Nothing here is timed.

bench/sweep_service.py, bench/own_suite.py, bench/confirm_tests.py and bench/cli_startup.py have smoke runs of their
own (tests/integration/test_bench_sweep_service.py, tests/unit/gate/, tests/unit/cli/test_startup.py).
bench/confirm.py and bench/sweep.py run the GPU probes under compute-sanitizer: their small size runs on the GPU box
(tests/gpu/test_bench_smoke_gpu.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benches import run_bench

REPO = Path(__file__).resolve().parents[2]

SMOKE = {
    "parse": ["--mb", "2"],
    "slots_parse": ["--slots", "1,2", "--repeat", "1", "--records", "200"],
    "replay": ["--device", "cpu", "--steps", "1", "--rounds", "1", "--threads", "1"],
    "dashboard": ["--jobs", "30", "--findings", "100", "--sweeps", "2", "--cases", "5", "--repeat", "2"],
    "load": ["--jobs", "10", "--submitters", "2", "--workers", "1", "--drain-limit-s", "300"],
    "overhead": ["--probe", "selftest", "--tool", "none", "--repeats", "1", "--smoke"],
}
# The dashboard's pages on both stores (PostgreSQL on loopback, as the integration tests use it); the load on SQLite
# only, since tests/integration/test_load.py already drains jobs through both.
STORES = {"dashboard": "sqlite,postgres", "load": "sqlite"}


@pytest.mark.parametrize("bench", sorted(SMOKE))
def test_the_benchmark_runs_at_a_small_size(bench: str, tmp_path: Path) -> None:
    args = [*SMOKE[bench], *(["--stores", STORES[bench]] if bench in STORES else [])]
    run_bench(f"{bench}.py", args, env={"TMPDIR": str(tmp_path)})

def test_every_benchmark_has_a_smoke_run() -> None:
    """A benchmark added to bench/ without a small size here (or a smoke test of its own) fails this."""
    elsewhere = {"sweep_service", "own_suite", "confirm_tests", "cli_startup", "confirm", "sweep"}
    scripts = {path.stem for path in (REPO / "bench").glob("*.py")}
    assert scripts - elsewhere == set(SMOKE), scripts - elsewhere ^ set(SMOKE)
