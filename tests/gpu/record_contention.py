"""What K record-heavy sanitizer processes on one GPU wait on: the host's cores or the GPU.

The 384-case grid's unguarded cases (narrow-matmul, n = 1..128, m = k = tile = 32: about 63,500 uninitialized reads)
split K ways, balanced by their expected records, K processes started at once under initcheck (device backtraces,
confirmation off, cold): the wall time, the records per second over all processes, and the GPU's utilization
(NVML, the share of time a kernel ran, sampled every 0.1 s) while they ran. Records are the ones the kernel
must produce (expected_uninit_reads), all of which the sanitizer reports; cuprobe keeps the first max_records.
With `--pin`, each process and its children are kept to one physical core (both of its hardware threads where
the host has them), so K processes cannot share a core. `--guarded` also runs the guarded kernel's cases the same
way (the same launches, no records). Prints the CPU topology first. From the project root on a GPU machine:
    python3 tests/gpu/record_contention.py [--k 1,2,4,8] [--pin] [--guarded]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cuprobe.contract import Tool  # noqa: E402
from cuprobe.probes.narrow_matmul import expected_uninit_reads  # noqa: E402
from cuprobe.service.config import get_settings  # noqa: E402
from cuprobe.service.models import ProbeRequest  # noqa: E402
from cuprobe.service.probing.runner import run_probe  # noqa: E402

N = list(range(1, 129))


def topology() -> list[list[int]]:
    """The host's physical cores, each as the list of its hardware threads (one entry each where there is no SMT)."""
    cores: dict[str, list[int]] = {}
    for cpu in sorted(os.sched_getaffinity(0)):
        path = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
        key = path.read_text().strip() if path.exists() else str(cpu)
        cores.setdefault(key, []).append(cpu)
    return list(cores.values())


def balanced(k: int, variant: str) -> list[list[int]]:
    """n values split k ways, each part holding about the same expected records (greedy, largest first)."""
    parts: list[list[int]] = [[] for _ in range(k)]
    load = [0] * k
    for n in sorted(N, key=lambda n: -expected_uninit_reads(32, 32, n, 32, "unguarded")):
        i = load.index(min(load))
        parts[i].append(n)
        load[i] += expected_uninit_reads(32, 32, n, 32, "unguarded") + 1
    return [sorted(p) for p in parts if p]


class GpuSampler:
    """NVML utilization.gpu every 0.1 s in a thread; `between(t0, t1)` gives the samples in a window."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        try:
            import pynvml

            pynvml.nvmlInit()
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            self._nvml = pynvml
        except Exception as exc:  # no NVML: say so, measure the rest
            print(f"no GPU utilization: {type(exc).__name__}: {exc}")
            self._nvml = None
            return
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            assert self._nvml is not None
            util = self._nvml.nvmlDeviceGetUtilizationRates(self._handle).gpu
            self.samples.append((time.monotonic(), int(util)))

    def between(self, t0: float, t1: float) -> str:
        window = [u for t, u in self.samples if t0 <= t <= t1]
        if not window:
            return "no samples"
        return f"median {statistics.median(window):.0f} %, mean {statistics.mean(window):.0f} % ({len(window)} samples)"

    def stop(self) -> None:
        self._stop.set()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", default="1,2,4,8")
    parser.add_argument("--pin", action="store_true", help="also run each K with every process on a core of its own")
    parser.add_argument("--guarded", action="store_true", help="also run the guarded kernel's cases (no records)")
    args = parser.parse_args()
    cores = topology()
    print(f"{len(cores)} physical cores: {cores}", flush=True)
    settings = get_settings().model_copy(update={"confirm": False, "warm_starts": False})
    work = Path(tempfile.mkdtemp(prefix="cuprobe-record-contention-"))
    gpu = GpuSampler()
    rows = []
    ks = [int(k) for k in args.k.split(",")]
    plans = [(variant, k, pin) for variant in (["unguarded", "guarded"] if args.guarded else ["unguarded"])
             for k in ks for pin in ([False, True] if args.pin and k > 1 else [False])]
    for variant, k, pin in plans:
        parts = balanced(k, variant)
        if pin and len(parts) > len(cores):
            print(f"K={k}: more processes than physical cores, not pinned")
            continue

        def one(
            i: int, parts: list[list[int]] = parts, pin: bool = pin, variant: str = variant, k: int = k
        ) -> tuple[float, float]:
            if pin:
                os.sched_setaffinity(0, cores[i])  # this thread: the sanitizer and its target inherit it
            request = ProbeRequest(
                probe="narrow-matmul",
                tool=Tool.INITCHECK,
                params={"m": 32, "k": 32, "tile": 32, "n": parts[i], "variants": [variant]},
                show_backtrace="device",
                timeout_s=300,
            )
            began = time.monotonic()
            result = run_probe(request, workdir=work / f"{variant}-k{k}-{'pin' if pin else 'free'}-{i}",
                               settings=settings)
            return time.monotonic() - began, float(result.timing.get("run", 0.0))

        began = time.monotonic()
        with ThreadPoolExecutor(len(parts)) as pool:
            done = list(pool.map(one, range(len(parts))))
        ended = time.monotonic()
        # what the sanitizer reported (the parse keeps at most max_records a process; the sanitizer makes them all)
        wall = ended - began
        records = sum(expected_uninit_reads(32, 32, n, 32, "unguarded") for n in N) if variant == "unguarded" else 0
        runs = [r for _, r in done]
        rows.append((variant, k, pin, wall, records, runs, gpu.between(began, ended)))
        print(f"{variant} K={k} {'pinned' if pin else 'free'}: {wall:.1f} s, {records} records "
              f"({records / wall:,.0f} a second); each process's run stage {min(runs):.1f}-{max(runs):.1f} s, "
              f"whole {min(w for w, _ in done):.1f}-{max(w for w, _ in done):.1f} s; GPU {rows[-1][-1]}", flush=True)
    gpu.stop()
    print(f"\n{'cases':<10}{'K':>3}{'cores':>8}{'wall_s':>8}{'records':>9}{'records/s':>11}{'vs K=1':>8}  GPU busy")
    first = {v: w for v, k, p, w, *_ in rows if k == 1}
    for variant, k, pin, wall, records, _, util in rows:
        speedup = f"{first[variant] / wall:.2f}x" if variant in first else "-"
        print(f"{variant:<10}{k:>3}{'own' if pin else 'shared':>8}{wall:>8.1f}{records:>9}{records / wall:>11,.0f}"
              f"{speedup:>8}  {util}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
