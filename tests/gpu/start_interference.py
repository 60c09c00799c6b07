"""Does another process's start-up slow a sanitizer process's kernel cases? pycuda alone, no cuprobe code.

Process A runs kernel cases in a loop for --seconds: each case allocates a fresh buffer, launches a kernel that reads
it before anything wrote it (under initcheck: --reads records per case, the host-side work a narrow-matmul case
makes), synchronises and frees it; it writes each case's end time. --quiet-s after A's first case, the parent starts
--others processes at once, each doing one kind of start-up (--what) and exiting:
  context  pycuda: the CUDA context and a kernel module loaded (what a cold sweep process does before its cases)
  torch    `import torch`, no CUDA (what the early import does beside a process's cases)
  cpu      two seconds of pure Python (a CPU core busy, nothing else)
  none     nothing is started (the control: how steady A's rate is by itself)
  torch-in-a  no other process: A itself imports torch on a second thread (what cuprobe's early import does)
Others run under the same sanitizer as A, or bare with --others-bare. Printed: A's cases per second before the
others start, while any of them runs, and after; the ratio of during to before.
Usage (GPU box, from the project root):
  python3 tests/gpu/start_interference.py --what context [--others 4] [--sanitizer PATH] [--bare-a] [--others-bare]
                                          [--reuse]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

KERNEL = """
__global__ void read_fresh(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * 2.0f;
}
"""

OTHERS = {
    "context": (
        "import pycuda.autoinit\nfrom pycuda.compiler import SourceModule\n"
        f"SourceModule({KERNEL!r}).get_function('read_fresh')\n"
    ),
    "torch": "import torch\n",
    "cpu": "import time\nend = time.perf_counter() + 2.0\nwhile time.perf_counter() < end:\n    pass\n",
}


def cases(out: Path, seconds: float, reads: int, reuse: bool, import_after_s: float | None = None) -> None:
    """Process A: kernel cases until `seconds` after the first, each end time written to `out`. `reuse`: every case
    reads the same never-written buffer (still `reads` records a case) instead of allocating and freeing its own.
    `import_after_s`: import torch on a second thread that long after the first case, its start and end written
    beside `out`."""
    import numpy as np
    import pycuda.autoinit  # noqa: F401
    import pycuda.driver as cuda
    from pycuda.compiler import SourceModule

    fn = SourceModule(KERNEL).get_function("read_fresh")
    written = cuda.mem_alloc(reads * 4)
    unwritten = cuda.mem_alloc(reads * 4)
    ends: list[float] = []
    first = time.time()
    (out.parent / "started").write_text(str(first))
    if import_after_s is not None:
        threading.Thread(target=_import_torch, args=(out.parent / "import.json", first + import_after_s)).start()
    while time.time() - first < seconds:
        fresh = unwritten if reuse else cuda.mem_alloc(reads * 4)
        fn(fresh, written, np.int32(reads), block=(128, 1, 1), grid=((reads + 127) // 128, 1))
        cuda.Context.synchronize()
        if not reuse:
            fresh.free()
        ends.append(time.time())
    out.write_text(json.dumps(ends))


def _import_torch(out: Path, at: float) -> None:
    time.sleep(max(0.0, at - time.time()))
    began = time.time()
    import torch  # noqa: F401  (the import is what is timed)

    out.write_text(json.dumps([began, time.time()]))


def rate(ends: list[float], start: float, end: float) -> float:
    inside = [t for t in ends if start <= t < end]
    return len(inside) / (end - start) if end > start else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--what", choices=[*OTHERS, "none", "torch-in-a"], default="context")
    parser.add_argument("--others", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=12.0, help="how long A runs its cases")
    parser.add_argument("--quiet-s", type=float, default=2.5, help="A alone before the others start")
    parser.add_argument("--reads", type=int, default=256, help="uninitialised reads per case")
    parser.add_argument("--sanitizer", default="/usr/local/cuda/bin/compute-sanitizer")
    parser.add_argument("--bare-a", action="store_true", help="A without the sanitizer")
    parser.add_argument("--others-bare", action="store_true", help="the others without the sanitizer")
    parser.add_argument("--reuse", action="store_true", help="A's cases read one buffer: no allocation per case")
    parser.add_argument("--child-cases", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-import-after-s", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_cases:
        cases(args.child_cases, args.seconds, args.reads, args.reuse, args.child_import_after_s)
        return 0
    under = [args.sanitizer, "--tool", "initcheck", "--print-limit", "0", "--show-backtrace", "device"]
    work = Path(tempfile.mkdtemp(prefix="interference-"))
    out = work / "ends.json"
    a_cmd = [sys.executable, __file__, "--child-cases", str(out), "--seconds", str(args.seconds), "--reads",
             str(args.reads), *(["--reuse"] if args.reuse else [])]
    if args.what == "torch-in-a":
        a_cmd += ["--child-import-after-s", str(args.quiet_s)]
    a_under = [*under, "--xml", "--save", str(work / "a.xml")]  # as cuprobe runs a probe (its records kept)
    a = subprocess.Popen(([] if args.bare_a else a_under) + a_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while not (work / "started").exists():
        if a.poll() is not None:
            print(f"A ended before its first case: {a.stderr.read().decode()[-2000:] if a.stderr else ''}")
            return 1
        time.sleep(0.01)
    time.sleep(args.quiet_s)
    began = time.time()
    others = []
    if args.what in OTHERS:
        for _ in range(args.others):
            cmd = [sys.executable, "-c", OTHERS[args.what]]
            others.append(subprocess.Popen(([] if args.others_bare else under) + cmd, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"}))
    for other in others:
        other.wait()
    ended = time.time() if others else began + 3.0
    a.wait()
    if args.what == "torch-in-a":
        began, ended = json.loads((work / "import.json").read_text())
    ends = json.loads(out.read_text())
    first = float((work / "started").read_text())
    before, during, after = rate(ends, first + 0.5, began), rate(ends, began, ended), rate(ends, ended, ends[-1])
    who = "bare" if args.others_bare else "under initcheck"
    what = (
        "torch imported on A's second thread"
        if args.what == "torch-in-a"
        else f"{args.others if others else 0} x {args.what} ({who})"
    )
    print(
        f"A {'bare' if args.bare_a else 'under initcheck'}{' (one buffer)' if args.reuse else ''}, {what} "
        f"for {ended - began:.2f} s: cases/s before {before:.1f}, during {during:.1f}, after {after:.1f}; "
        f"during/before {during / before:.2f}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
