"""Benchmark: narrow-matmul initcheck sweeps with K sanitizer processes sharing one GPU.

The 48-case grid (n = 1..16 x {unguarded, guarded, torch}, m = k = tile = 32) runs once as the baseline — one
process per case, one at a time — then batched with K = 1, 2, 4, 8 and this host's default K, all in this one
run; each batched run's per-case findings (outcome, signature, count) must equal K = 1's and the baseline's.
With --full, the 384-case nightly grid (n = 1..128 x 3 variants) runs batched at each K: cases per GPU-hour.
The rows "spares ready" time a runner warm from its last run: its K sanitizer spares, then the confirmation's four
re-runs (--no-warm-reruns: those start cold during the sweep), started and ready before the clock.
Prints a table of wall times and ratios, and under each row where its slowest process spent its time (sanitizer
run, parse, confirmation's bare re-runs...). Writes report.html and summary.md of the last sweep to --out.
--compare-parse adds, for each 384-case row with K > 1, the same run with every XML parsed in the sweep's own process
(LocalRunner's `parse_in_children` off) beside the default (parsed in child processes: docs/sweep.md, "Parsing
beside other slots").
    python bench/sweep.py [--full] [--slots 1,2,4,8] [--compare-parse] [--out DIR]
    python bench/sweep.py --render DIR/sweep.json --out DIR    (the report from a saved sweep, e.g. on a CPU box)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cuprobe.contract import is_confirm_control  # noqa: E402
from cuprobe.probes import registry  # noqa: E402
from cuprobe.service.config import Settings, get_settings  # noqa: E402
from cuprobe.service.models.sweep import Sweep  # noqa: E402
from cuprobe.service.probing.confirm import (  # noqa: E402
    CONFIRM_DIR,
    LATE_DIR,
    RerunPool,
)
from cuprobe.service.probing.runner import RESULT_NAME, XML_NAME, start_spare  # noqa: E402
from cuprobe.service.probing.spares import Spares  # noqa: E402
from cuprobe.service.reports.html import html  # noqa: E402
from cuprobe.service.reports.markdown import markdown  # noqa: E402
from cuprobe.service.sweep.definition import parse_definition  # noqa: E402
from cuprobe.service.sweep.diff import diff  # noqa: E402
from cuprobe.service.sweep.execute import SWEEP_BACKTRACE, LocalRunner, requests_of, run_sweep  # noqa: E402
from cuprobe.service.sweep.plan import BATCHING, NEED_RECORDS, plan  # noqa: E402
from cuprobe.service.worker.gpu_slots import host_slots  # noqa: E402

GRID = """
name = "{name}"
[[entry]]
probe = "narrow-matmul"
tool = ["initcheck"]
batch = {batch}
params = {{ m = 32, k = 32, tile = 32 }}
grid = {{ n = {{ first = 1, last = {last} }}, variants = ["unguarded", "guarded", "torch"] }}
"""

Cases = dict[str, tuple[str, tuple[tuple[str, int], ...]]]


def timed(
    name: str,
    last: int,
    batch: bool,
    workdir: Path,
    settings: Settings,
    slots: int,
    primed: bool = False,
    warm_reruns: bool = False,
    parse_in_children: bool | None = None,
    share_reruns: bool = True,
) -> tuple[Sweep, float]:
    """One sweep's wall time. `primed`: K spares are started and ready before the clock starts (a worker whose
    spares are warm from its last run of this kind); they serve the first K processes. `warm_reruns` (with `primed`,
    where the confirmation is on): so are the four re-runs the sweep's batches share (confirm/warm.py), made once
    the spares are ready (READY_RERUNS_ORDER)."""
    grid = GRID.format(name=name, batch=str(batch).lower(), last=last)
    if options := os.environ.get("CUPROBE_BENCH_OPTIONS"):  # an experiment: sanitizer options for every process,
        grid += f"options = {options}\n"  # as a TOML inline table (`{ kernel_name_exclude = ["kns=x"] }`)
    definition = parse_definition(grid)
    if os.environ.get("CUPROBE_BENCH_NEEDS_IGNORED") == "1":
        # An experiment: the planner with no need counted (docs/sweep.md, "How cases become processes"): the torch
        # cases spread over the batches with the rest (the 384-case grid at K = 8: 16 in each of the eight).
        BATCHING["narrow-matmul"].needs = lambda point: frozenset()  # type: ignore[method-assign]
    if records := os.environ.get("CUPROBE_BENCH_TORCH_RECORDS"):
        # An experiment: what torch's import costs a batch in the packed plan, in records (3,000 by default), to
        # measure another value against it.
        NEED_RECORDS["torch"] = float(records)
    spares = None
    after = float(os.environ.get("CUPROBE_BENCH_RERUNS_AFTER_S") or 0)  # an experiment: hand them over later
    warm = primed and warm_reruns and settings.confirm
    # An experiment (CUPROBE_BENCH_IDLE_RERUNS=1, with the confirmation off): the four re-run processes made and
    # ready as for a confirming sweep, then never given anything: does their mere presence slow the sweep?
    idle = primed and not settings.confirm and os.environ.get("CUPROBE_BENCH_IDLE_RERUNS") == "1"
    reruns = RerunPool(workdir / name / "reruns", settings, after) if warm or idle else None
    order = reruns_order()
    if reruns is not None and order != "after":
        reruns.prepare("narrow-matmul")
        if order == "before":
            reruns.wait_ready(300)
    if primed:
        planned = plan(definition, slots)
        spares = Spares(workdir / name / "spares", slots)
        # One for each of the first K processes, each as far as its own start-up goes: batches packed by what their
        # cases need differ in it (only the one with the torch cases imports torch).
        for _, request in requests_of(planned)[:slots]:
            spares.ask(partial(start_spare, request, settings, False, spares.root), lambda: True)
        spares.budget = max(0, len(planned) - slots)  # then as the sweep's own pool: no spare it cannot use
        ready = spares.wait_ready(slots, 300)
        print(f"  {name}: {ready} of {slots} spares ready before the clock starts", file=sys.stderr, flush=True)
    if reruns is not None:
        if order == "after":
            reruns.prepare("narrow-matmul")
        ready = reruns.wait_ready(300)
        what = "idle re-run processes, never used," if idle else "re-runs"
        print(f"  {name}: {ready} of 4 {what} ready before the clock starts ({order})", file=sys.stderr, flush=True)
    start = time.monotonic()
    try:
        sweep = run_sweep(
            definition,
            LocalRunner(
                workdir / name, settings, slots, spares, None if idle else reruns, parse_in_children, share_reruns
            ),
            progress=lambda done, total, what: print(
                f"  {time.monotonic() - start:7.1f}s {name}: {done}/{total} {what}", file=sys.stderr, flush=True
            ),
        )
        return sweep, time.monotonic() - start
    finally:
        if spares is not None:
            spares.close()
        if reruns is not None:
            reruns.close()


# When the ready re-runs are made, against the spares (CUPROBE_BENCH_RERUNS_ORDER). Measured on an H100
# (docs/confirmation.md, "Re-runs ready before the sweep"): made while the spares start ("beside") they ran their
# cases about four times slower than cold re-runs and slowed the sweep; made once the spares are ready ("after") they
# did not. "before": made and ready before the spares start (the experiment that tells the two apart).
READY_RERUNS_ORDER = ("after", "beside", "before")


def reruns_order() -> str:
    order = os.environ.get("CUPROBE_BENCH_RERUNS_ORDER") or READY_RERUNS_ORDER[0]
    if order not in READY_RERUNS_ORDER:
        raise SystemExit(f"CUPROBE_BENCH_RERUNS_ORDER={order!r}: expected one of {', '.join(READY_RERUNS_ORDER)}")
    return order


def warm_starts(sweep: Sweep) -> str:
    """How many of the sweep's runs were handed to a spare (RunResult.warm_start), of all its runs."""
    return f"{sum(1 for p in sweep.processes for w in p.warm if w)}/{sum(len(p.warm) for p in sweep.processes)}"


def per_case(sweep: Sweep) -> Cases:
    return {
        c.key.split("/", 1)[1]: (c.outcome.value, tuple(sorted((f.signature, f.count) for f in c.findings)))
        for c in sweep.cases
        if not c.added
    }


def differences(a: Cases, b: Cases) -> list[str]:
    return [f"{key}: {a.get(key)} vs {b.get(key)}" for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)]


def stalls(sweep: Sweep) -> int:
    """Attempts the progress watchdog stopped and ran again (their time is in the wall time)."""
    return sum(sum(p.stalls) for p in sweep.processes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="also run the 384-case grid batched at each K")
    parser.add_argument("--skip-compare", action="store_true", help="skip the 48-case runs")
    parser.add_argument("--slots", default="1,2,4,8", help="K values to run, comma separated (plus the default)")
    parser.add_argument("--out", type=Path, default=Path("build/sweep-bench"))
    parser.add_argument("--render", type=Path, help="only write the report of a sweep saved as JSON")
    parser.add_argument("--no-warm", action="store_true", help="skip the warm-start rows (batched with spares ready)")
    parser.add_argument("--no-cold", action="store_true", help="384-case grid: only the rows with spares ready")
    parser.add_argument(
        "--compare-parse", action="store_true", help="384-case rows with K > 1 also with every XML parsed here"
    )
    parser.add_argument(
        "--baseline-own-reruns",
        action="store_true",
        help="the baseline's processes confirm with their own re-runs each, as before "
        "a sweep's processes shared one set",
    )
    parser.add_argument(
        "--warm-reruns",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="rows with spares ready also have the confirmation's four re-runs ready before the clock, made once the "
        "spares are ready (default); --no-warm-reruns: they start cold during the sweep",
    )
    parser.add_argument(
        "--per-case-warm", action="store_true", help="also run one process per case with warm starts (slow)"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.render:
        write_report(Sweep.model_validate_json(args.render.read_text()), args.out)
        return 0
    settings = get_settings()
    default_k = host_slots(settings)
    ks = list(dict.fromkeys([*slot_values(parser, args.slots), default_k]))
    print(f"host: {os.cpu_count()} cores; default K = {default_k}; K values: {ks}")
    print(f"sweep processes use compute-sanitizer --show-backtrace as SWEEP_BACKTRACE says: {SWEEP_BACKTRACE}")
    work = Path(tempfile.mkdtemp(prefix="cuprobe-sweep-bench-"))
    ok = True
    last: Sweep | None = None
    cold = settings.model_copy(update={"warm_starts": False})
    if not args.skip_compare:
        # The baseline is one process per case, one at a time, each started cold (as before warm starts).
        own = args.baseline_own_reruns
        base, t_base = timed("bench48-per-case", 16, False, work, cold, 1, share_reruns=not own)
        reference = per_case(base)
        ok &= all(c.outcome.ran for c in base.cases)
        label = "per-case, K=1, own re-runs" if args.baseline_own_reruns else "per-case, K=1 (baseline)"
        rows = [(label, len(base.processes), t_base, "-", stalls(base), warm_starts(base))]
        runs: list[tuple[str, bool, Settings, int, bool]] = []
        if args.per_case_warm:
            runs.append(("per-case, K=1, warm starts", False, settings, 1, False))
        for k in ks:
            runs.append((f"batched, K={k}", True, cold, k, False))
            if not args.no_warm:
                runs.append((f"batched, K={k}, spares ready", True, settings, k, True))
        first: Cases | None = None
        header = (
            f"{'run':<32}{'procs':>6}{'wall_s':>9}{'vs baseline':>13}{'same findings':>15}{'stalled':>9}{'warm':>8}"
        )
        print(f"\n48-case sweep ({len(reference)} cases), each row as it finishes\n{header}")
        print(_row48(rows[0], t_base), flush=True)
        print(confirmations(base), flush=True)
        for label, batch, chosen, k, primed in runs:
            name = f"bench48-{'batched' if batch else 'per-case'}-k{k}{'-primed' if primed else ''}"
            if not batch:
                name += "-warm"
            sweep, wall = timed(name, 16, batch, work, chosen, k, primed, args.warm_reruns)
            cases = per_case(sweep)
            if batch and first is None:
                first = cases  # the first batched run: every later one is compared with it and the baseline
            diffs = differences(reference, cases) + (differences(first, cases) if first is not None else [])
            ok &= not diffs and all(c.outcome.ran for c in sweep.cases)
            same = "yes" if not diffs else "NO"
            rows.append((label, len(sweep.processes), wall, same, stalls(sweep), warm_starts(sweep)))
            for line in diffs:
                print(f"  DIFFERS {label}: {line}")
            print(_row48(rows[-1], t_base), flush=True)
            print(slowest(sweep), flush=True)
            print(xml_sizes(work / name), flush=True)
            print(confirmations(sweep), flush=True)
            print(reruns_split(work / name), flush=True)
            last = sweep
        print(f"\n48-case sweep ({len(reference)} cases)\n{header}")
        for row in rows:
            print(_row48(row, t_base))
    if args.full:
        print(
            f"\n384-case grid, batched\n{'K':>3}{'spares':>8}{'parse':>7}{'procs':>7}{'wall_s':>9}"
            f"{'cases/GPU-hour':>16}{'same as K=1':>13}{'stalled':>9}{'warm':>8}"
        )
        first = None
        for k in ks:
            parses = [None, False] if args.compare_parse and k > 1 else [None]
            primings = [p for p, skipped in ((False, args.no_cold), (True, args.no_warm)) if not skipped]
            for primed, parse in [(p, q) for p in primings for q in parses]:
                chosen = settings if primed else cold
                where = "child" if k > 1 and parse is None else "here"
                name = f"nightly-narrow-matmul-k{k}{'-primed' if primed else ''}-{where}"
                full, wall = timed(name, 128, True, work, chosen, k, primed, args.warm_reruns, parse)
                cases = per_case(full)
                first = first if first is not None else cases
                agrees = not differences(first, cases)
                ok &= agrees and all(c.outcome.ran for c in full.cases)
                n = len(cases)
                print(
                    f"{k:>3}{'ready' if primed else 'none':>8}{where:>7}{len(full.processes):>7}{wall:>9.1f}"
                    f"{n / wall * 3600:>16,.0f}{'yes' if agrees else 'NO':>13}{stalls(full):>9}{warm_starts(full):>8}",
                    flush=True,
                )
                print(slowest(full), flush=True)
                print(torch_or_not(full), end="", flush=True)
                print(not_run(full), end="", flush=True)
                print(xml_sizes(work / name), flush=True)
                print(before_cases(work / name), flush=True)
                print(confirmations(full), flush=True)
                print(reruns_split(work / name), flush=True)
                last = full
    if last is None:
        return 0
    (args.out / "sweep.json").write_text(last.model_dump_json())
    try:
        write_report(last, args.out)
    except ImportError as exc:  # the GPU box may lack matplotlib: render from sweep.json elsewhere
        print(f"no report here ({exc}); render it with: python bench/sweep.py --render {args.out / 'sweep.json'}")
    return 0 if ok else 1


def slot_values(parser: argparse.ArgumentParser, text: str) -> list[int]:
    """--slots as K values (whole numbers from 1), or the parser's usage error naming the one that is not."""
    values = []
    for part in text.split(","):
        if not part.strip().isdigit() or int(part) < 1:
            parser.error(f"--slots {text}: {part.strip()!r} is not a K (a whole number from 1)")
        values.append(int(part))
    return values


def not_run(sweep: Sweep) -> str:
    """A line per process some of whose cases did not run: how many, their outcome and the message (why the bench
    exits 1; nothing where every case ran)."""
    lines = []
    for process in sorted({c.process for c in sweep.cases if not c.outcome.ran}):
        cases = [c for c in sweep.cases if c.process == process]
        missed = [c for c in cases if not c.outcome.ran]
        said = " | ".join(sorted({f"{c.outcome.value}: {c.message}"[:400] for c in missed}))
        lines.append(f"  NOT RUN: process {process}, {len(missed)} of its {len(cases)} case(s): {said}\n")
    return "".join(lines)


def slowest(sweep: Sweep) -> str:
    """Where the slowest run of the sweep spent its time, per stage (the stages over 0.1 s), and its run stage per
    kind of case (the probe's own `seconds` per case, grouped by the case id without its number)."""
    runs = [(sum(stages.values()), p.index, stages) for p in sweep.processes for stages in p.stages]
    if not runs:
        return "  slowest process: no stage timing"
    total, index, stages = max(runs, key=lambda run: run[0])
    parts = ", ".join(f"{name} {seconds:.1f}" for name, seconds in stages.items() if seconds >= 0.1)
    return f"  slowest process: {total:.1f} s ({parts})" + in_cases(sweep, index, stages.get("run"))


def torch_or_not(sweep: Sweep) -> str:
    """`  with torch's cases: 1, 8.1 s; without them: 7, 8.4-9.0 s (median 8.7)` (processes; each one's stages added up,
    its first run), where some processes ran torch's cases and some did not: whether the one the packed plan gave
    fewer records, for torch's import (service/sweep/plan.py NEED_RECORDS), ends beside the others. Empty otherwise."""
    totals: dict[bool, list[float]] = {True: [], False: []}
    for process in sweep.processes:
        probe = registry.get(process.probe)
        try:
            torch = probe.uses_torch(probe.Params.model_validate(process.params))
        except ValueError:
            continue
        if process.stages:
            totals[torch].append(sum(process.stages[0].values()))
    if not totals[True] or not totals[False]:
        return ""

    def spread(times: list[float]) -> str:
        if len(times) == 1:
            return f"{times[0]:.1f} s"
        return f"{min(times):.1f}-{max(times):.1f} s (median {statistics.median(times):.1f})"

    with_, without = totals[True], totals[False]
    return f"  with torch's cases: {len(with_)}, {spread(with_)}; without them: {len(without)}, {spread(without)}\n"


def in_cases(sweep: Sweep, index: int, run_s: float | None) -> str:
    """`; in its cases: unguarded 2.1 (16), guarded 0.8 (16)...; outside them 1.9` for process `index`, or nothing
    where its cases carry no timing. Outside: the start-up, the setup before the first case, the confirmer's control
    cases and the exit."""
    kinds: dict[str, list[float]] = {}
    for case in sweep.cases:
        for probe_case, seen in case.observations.items():
            if case.process == index and isinstance(seen.get("seconds"), int | float):
                kinds.setdefault(re.sub(r"-?n?\d+$", "", probe_case) or probe_case, []).append(float(seen["seconds"]))
    if not kinds:
        return ""
    parts = ", ".join(f"{kind} {sum(times):.1f} ({len(times)})" for kind, times in sorted(kinds.items()))
    inside = sum(sum(times) for times in kinds.values())
    outside = f"; outside them {run_s - inside:.1f}" if run_s is not None else ""
    return f"\n  its run stage, in its cases (seconds, cases): {parts}{outside}"


# The confirmation's wall time, as a process's message gives it (service/probing/confirm/).
RERUNS_S = re.compile(r"\(([0-9.]+) s of bare re-runs")


def confirmations(sweep: Sweep) -> str:
    """How the grid's findings were confirmed (a confirmer control that came out wrong makes its process's cases
    sanitizer-error, which fails the run), and how the re-runs were shared, from the processes' messages."""
    counts = Counter(str(f.confirmation.value if f.confirmation else "none") for c in sweep.cases for f in c.findings)
    shared = sum(1 for p in sweep.processes for m in p.messages if "one set for the sweep" in m)
    runs = sum(len(p.messages) for p in sweep.processes)
    found = dict(sorted(counts.items())) or "no findings"
    spent = sorted({float(m) for p in sweep.processes for text in p.messages for m in RERUNS_S.findall(text)})
    took = f"; the re-runs took {', '.join(f'{s:g}' for s in spent)} s" if spent else ""
    warm = sum(1 for p in sweep.processes for m in p.messages if "in processes ready before it" in m)
    return f"  confirmations: {found}; re-runs shared by {shared} of {runs} runs, warm in {warm}{took}"


def xml_sizes(workdir: Path) -> str:
    """The sanitizer XML the sweep's processes left (run.xml; a spare's folder may be gone), in MB: what was parsed."""
    sizes = sorted((p.stat().st_size for p in workdir.glob("**/" + XML_NAME)), reverse=True)
    return "  XML per process: " + (", ".join(f"{s / 1e6:.1f}" for s in sizes) + " MB" if sizes else "none left")


def exit_s(folder: Path) -> float:
    """A sanitizer run's exit, from the files it left in `folder`: from its result.json's last write (the harness's
    last act before it exits) to its run.xml's (the sanitizer's wrap-up as the process ended). OSError where either
    is missing."""
    return (folder / XML_NAME).stat().st_mtime - (folder / RESULT_NAME).stat().st_mtime


def before_cases(workdir: Path) -> str:
    """Each sanitizer process's time from its parameters to its first case (imports, module loads: the probe's
    `before_first_case_s`), in the confirmer's planted control cases, and after its result (exit_s); and torch's
    import on its second thread where it ran (--prefetch-torch)."""
    times, controls, tails, imports = [], [], [], []
    for xml in workdir.glob("**/" + XML_NAME):
        try:
            result = json.loads((xml.parent / RESULT_NAME).read_text())
            tails.append(exit_s(xml.parent))
        except (OSError, ValueError):
            continue
        context = result.get("context", {})
        if isinstance(context.get("before_first_case_s"), int | float):
            times.append(float(context["before_first_case_s"]))
        if isinstance(took := context.get("torch_prefetch", {}).get("took_s"), int | float):
            imports.append(float(took))
        planted = [
            c.get("observations", {}).get("seconds", 0.0)
            for c in result.get("cases", [])
            if is_confirm_control(str(c.get("id", "")))
        ]
        if planted:
            controls.append(sum(planted))
    if not times:
        return "  before the first case: no timing left"
    line = f"  before the first case, per process: {min(times):.2f}-{max(times):.2f} s ({len(times)} processes)"
    if controls:
        line += f"; in the confirmer's control cases: {min(controls):.2f}-{max(controls):.2f} s"
    if imports:
        took = f"{min(imports):.2f}-{max(imports):.2f} s ({len(imports)} processes)"
        line += f"\n  torch's import on its second thread: {took}"
    if tails:
        line += (
            f"\n  from the result's write to the XML's last: {min(tails):.2f}-{max(tails):.2f} s,"
            f" median {statistics.median(tails):.2f} (the exit)"
        )
    return line


def reruns_split(workdir: Path) -> str:
    """Where each of the confirmation's bare re-runs spent its time, from the result.json it left: before its first
    case (start-up: imports, CUDA context, module loads), in the grid's cases (their `seconds`, with the slowest
    one), and in the confirmer's control cases. Exit and the result's writing are not in any of them."""
    parts = []
    late = sorted(workdir.glob(f"**/{LATE_DIR}/*/result.json"))  # flagged cases the early re-runs did not run
    for path in sorted(workdir.glob(f"**/{CONFIRM_DIR}/*/result.json")) + late:
        try:
            result = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        before = result.get("context", {}).get("before_first_case_s")
        grid: list[tuple[float, str]] = []
        control = 0.0
        for case in result.get("cases", []):
            seconds = case.get("observations", {}).get("seconds")
            if not isinstance(seconds, int | float):
                continue
            if is_confirm_control(str(case.get("id", ""))):
                control += float(seconds)
            else:
                grid.append((float(seconds), str(case.get("id", "?"))))
        head = f"{before:.2f}" if isinstance(before, int | float) else "?"
        slowest_case = ""
        if grid:
            worst = max(range(len(grid)), key=lambda i: grid[i][0])
            half = len(grid) // 2
            slowest_case = (
                f", slowest {grid[worst][0]:.3f}: #{worst} {grid[worst][1]}, median {_median(grid):.4f}"
                f" (first half {_median(grid[:half] or grid):.4f}, second {_median(grid[half:]):.4f})"
            )
        name = f"late {path.parent.name}" if path in late else path.parent.name
        # How its host thread waited for the GPU (probes/gpu.py: the primary context's flag as it ran).
        schedule = result.get("context", {}).get("cuda_schedule") or "?"
        parts.append(
            f"{name} {head} + {sum(s for s, _ in grid):.2f} ({len(grid)} cases{slowest_case})"
            f" + {control:.2f}, schedule {schedule}"
        )
    if not parts:
        return "  re-runs: no result left"
    return "  re-runs, s before the first case + in the grid's cases + in the control cases: " + "; ".join(parts)


def _median(timed: list[tuple[float, str]]) -> float:
    return sorted(seconds for seconds, _ in timed)[len(timed) // 2]


def _row48(row: tuple[str, int, float, str, int, str], t_base: float) -> str:
    label, procs, wall, same_findings, stalled, warmed = row
    return f"{label:<32}{procs:>6}{wall:>9.1f}{t_base / wall:>12.1f}x{same_findings:>15}{stalled:>9}{warmed:>8}"


def write_report(sweep: Sweep, out: Path) -> None:
    changes = diff(sweep, None)
    (out / "report.html").write_text(html(sweep, changes))
    (out / "summary.md").write_text(markdown(sweep, changes))
    print(f"report: {out / 'report.html'}")


if __name__ == "__main__":
    sys.exit(main())
