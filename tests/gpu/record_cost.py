"""Where initcheck's per-record cost goes: the same record-heavy narrow-matmul run under several backtrace settings.

One request (narrow-matmul, unguarded kernel, n = 1..16, m = k = tile = 32: 16 cases, 12,032 uninitialized reads)
runs cold, one process at a time, with `--show-backtrace device` (what sweeps use for initcheck) and `no`, rounds
alternating; then one process with one K-th of the cases, and K processes at once (the 16 cases split K ways) with
each setting: "at once / alone" near 1 means the K processes do not slow each other. Prints each run's wall time,
records and findings, and says whether the findings (signature, count per case) are the same under every setting —
the condition for a sweep to use the cheaper one. From the project root on a GPU machine:
    python3 tests/gpu/record_cost.py [--rounds 2] [--k 4] [--variants unguarded] [--backtraces device,no]

With `--variants guarded` or `torch` (no records) it times what is left: the kernels alone, or torch and cuBLAS
under the sanitizer, in one process and split K ways.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cuprobe.contract import Tool  # noqa: E402
from cuprobe.service.config import get_settings  # noqa: E402
from cuprobe.service.models import ProbeRequest, RunResult  # noqa: E402
from cuprobe.service.probing.runner import run_probe  # noqa: E402

N = list(range(1, 17))
VARIANTS = ["unguarded"]


def request(backtrace: str, n: list[int]) -> ProbeRequest:
    return ProbeRequest(
        probe="narrow-matmul",
        tool=Tool.INITCHECK,
        params={"m": 32, "k": 32, "tile": 32, "n": n, "variants": VARIANTS},
        show_backtrace=backtrace,
        timeout_s=300,
    )


def findings(result: RunResult) -> list[tuple[str, str | None, int]]:
    return sorted((f.signature, f.case, f.count) for f in result.findings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--variants", default="unguarded", help="narrow-matmul variants, comma separated")
    parser.add_argument("--backtraces", default="device,no", help="--show-backtrace settings, comma separated")
    args = parser.parse_args()
    VARIANTS[:] = args.variants.split(",")
    settings_list = args.backtraces.split(",")
    print(f"narrow-matmul n = 1..16, variants {VARIANTS}, initcheck", flush=True)
    settings = get_settings().model_copy(update={"confirm": False, "warm_starts": False})
    work = Path(tempfile.mkdtemp(prefix="cuprobe-record-cost-"))
    walls: dict[str, list[float]] = {s: [] for s in settings_list}
    seen: dict[str, list[tuple[str, str | None, int]]] = {}
    records: dict[str, int] = {}
    ok = True
    for r in range(args.rounds):
        for backtrace in settings_list:
            began = time.monotonic()
            result = run_probe(request(backtrace, N), workdir=work / f"one-{backtrace}-{r}", settings=settings)
            walls[backtrace].append(time.monotonic() - began)
            got = findings(result)
            records[backtrace] = sum(c for _, _, c in got)
            print(f"round {r} --show-backtrace {backtrace:<7} {walls[backtrace][-1]:7.2f} s  {result.outcome.value}, "
                  f"{records[backtrace]} records in {len(got)} finding(s)", flush=True)
            if seen.setdefault(backtrace, got) != got:
                ok = False
                print("  DIFFERS from this setting's first round")
    parts = [N[i :: args.k] for i in range(args.k)]
    alone: dict[str, float] = {}  # one process with one part's cases: what each of the K would take with no other
    for backtrace in settings_list:
        began = time.monotonic()
        run_probe(request(backtrace, parts[0]), workdir=work / f"part-{backtrace}", settings=settings)
        alone[backtrace] = time.monotonic() - began
        print(f"one process, {len(parts[0])} cases (one part) --show-backtrace {backtrace:<7} "
              f"{alone[backtrace]:7.2f} s", flush=True)
    together: dict[str, tuple[float, list[float]]] = {}
    for backtrace in settings_list:
        def one(i: int, backtrace: str = backtrace) -> tuple[float, RunResult]:
            began = time.monotonic()
            res = run_probe(request(backtrace, parts[i]), workdir=work / f"k-{backtrace}-{i}", settings=settings)
            return time.monotonic() - began, res
        began = time.monotonic()
        with ThreadPoolExecutor(args.k) as pool:
            done = list(pool.map(one, range(args.k)))
        wall = time.monotonic() - began
        together[backtrace] = (wall, [w for w, _ in done])
        merged = sorted(f for _, res in done for f in findings(res))
        same = merged == seen[backtrace]
        ok &= same
        print(f"K={args.k} --show-backtrace {backtrace:<7} {wall:7.2f} s wall; processes "
              f"{', '.join(f'{w:.1f}' for w, _ in done)} s; same findings as one process: {'yes' if same else 'NO'}",
              flush=True)
    print(f"\n{'--show-backtrace':<18}{'16 cases, one process':>22}{'one part alone':>16}"
          f"{'K=' + str(args.k) + ' at once':>12}{'at once / alone':>17}{'records':>9}")
    for backtrace in settings_list:
        wall = together[backtrace][0]
        print(f"{backtrace:<18}{statistics.median(walls[backtrace]):>22.2f}{alone[backtrace]:>16.2f}"
              f"{wall:>12.2f}{wall / alone[backtrace]:>17.2f}{records[backtrace]:>9}")
    if "device" not in walls or "no" not in walls:
        return 0 if ok else 1
    base = statistics.median(walls["device"])
    print(f"'no' vs 'device', one process: {statistics.median(walls['no']) / base:.2f}x the time")
    same = seen["device"] == seen["no"]
    print(f"findings (signature, case, count) the same under device and no: {'yes' if same else 'NO'}")
    if not same:
        for a, b in zip(seen["device"], seen["no"], strict=False):
            if a != b:
                print(f"  device: {a}\n  no:     {b}")
                break
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
