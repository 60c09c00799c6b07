"""Benchmark: a 48-case narrow-matmul initcheck sweep batched vs one process per case; then the full grid.

Runs n = 1..16 x {unguarded, guarded, torch} (m = k = tile = 32) batched (one sanitizer process) and one
process per case, checks every case's findings (signature, count) are identical, prints both wall times
and their ratio. With --full, runs the nightly narrow-matmul grid (n = 1..128 x 3 variants) batched and
prints its wall time and cases per GPU-hour. Writes report.html and summary.md of the last sweep to --out.
    python bench/sweep.py [--full] [--out DIR]
    python bench/sweep.py --render DIR/sweep.json --out DIR    (the report from a saved sweep, e.g. on a CPU box)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from service.config import Settings, get_settings  # noqa: E402
from service.models.sweep import Sweep  # noqa: E402
from service.reports.html import html  # noqa: E402
from service.reports.markdown import markdown  # noqa: E402
from service.sweep.definition import parse_definition  # noqa: E402
from service.sweep.diff import diff  # noqa: E402
from service.sweep.execute import SWEEP_BACKTRACE, LocalRunner, run_sweep  # noqa: E402

GRID = """
name = "{name}"
[[entry]]
probe = "narrow-matmul"
tools = ["initcheck"]
batch = {batch}
params = {{ m = 32, k = 32, tile = 32 }}
grid = {{ n = {{ first = 1, last = {last} }}, variant = ["unguarded", "guarded", "torch"] }}
"""


def timed(name: str, last: int, batch: bool, workdir: Path, settings: Settings) -> tuple[Sweep, float]:
    definition = parse_definition(GRID.format(name=name, batch=str(batch).lower(), last=last))
    start = time.monotonic()
    sweep = run_sweep(
        definition,
        LocalRunner(workdir / name, settings),
        progress=lambda done, total, what: print(f"  {name}: {done}/{total} {what}", flush=True),
    )
    return sweep, time.monotonic() - start


def per_case(sweep: Sweep) -> dict[str, tuple[str, tuple[tuple[str, int], ...]]]:
    return {
        c.key: (c.outcome.value, tuple(sorted((f.signature, f.count) for f in c.findings)))
        for c in sweep.cases
        if not c.added
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="also run the full n = 1..128 grid batched")
    parser.add_argument("--skip-compare", action="store_true", help="skip the 48-case batched vs per-case run")
    parser.add_argument("--out", type=Path, default=Path("build/sweep-bench"))
    parser.add_argument("--render", type=Path, help="only write the report of a sweep saved as JSON")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.render:
        write_report(Sweep.model_validate_json(args.render.read_text()), args.out)
        return 0
    settings = get_settings()
    print(f"sweep processes use compute-sanitizer --show-backtrace as SWEEP_BACKTRACE says: {SWEEP_BACKTRACE}")
    work = Path(tempfile.mkdtemp(prefix="cuprobe-sweep-bench-"))
    same = ran = True
    last: Sweep | None = None
    if not args.skip_compare:
        batched, t_batched = timed("bench48-batched", 16, True, work, settings)
        single, t_single = timed("bench48-per-case", 16, False, work, settings)
        a, b = per_case(batched), per_case(single)
        same = a == b
        ran = all(c.outcome.ran for c in batched.cases + single.cases)
        print(f"\n48-case sweep: {len(batched.processes)} batched process(es) vs {len(single.processes)} processes")
        print(f"{'run':<12}{'cases':>7}{'procs':>7}{'wall_s':>10}{'records':>10}")
        for label, sweep, wall in (("batched", batched, t_batched), ("per-case", single, t_single)):
            records = sum(c.records for c in sweep.cases if not c.added)
            print(f"{label:<12}{len(a):>7}{len(sweep.processes):>7}{wall:>10.1f}{records:>10}")
        print(f"ratio per-case / batched: {t_single / t_batched:.1f}x  (target >= 10x)")
        print(f"per-case findings identical: {same}; every case ran: {ran}")
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                print(f"  DIFFERS {key}: batched {a.get(key)} per-case {b.get(key)}")
        last = batched
    if args.full:
        full, t_full = timed("nightly-narrow-matmul", 128, True, work, settings)
        cases = sum(1 for c in full.cases if not c.added)
        print(
            f"\nfull grid: {cases} cases in {len(full.processes)} process(es), wall {t_full:.1f} s, "
            f"{cases / t_full * 3600:,.0f} cases per GPU-hour (target >= 10,000); "
            f"outcomes {full.counts()}; truncated cases {sum(c.truncated for c in full.cases)}"
        )
        last = full
        ran = ran and all(c.outcome.ran for c in full.cases)
    if last is None:
        return 0
    (args.out / "sweep.json").write_text(last.model_dump_json())
    try:
        write_report(last, args.out)
    except ImportError as exc:  # the GPU box may lack matplotlib: render from sweep.json elsewhere
        print(f"no report here ({exc}); render it with: python bench/sweep.py --render {args.out / 'sweep.json'}")
    return 0 if same and ran else 1


def write_report(sweep: Sweep, out: Path) -> None:
    changes = diff(sweep, None)
    (out / "report.html").write_text(html(sweep, changes))
    (out / "summary.md").write_text(markdown(sweep, changes))
    print(f"report: {out / 'report.html'}")


if __name__ == "__main__":
    sys.exit(main())
