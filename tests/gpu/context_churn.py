"""What releasing device 0's primary context between two blocks costs a process, bare and under a sanitizer.

A narrow-matmul run (cases, then the confirmer's control cases) used to retain the primary context for its cases,
release it (the last reference: the driver destroys it), then retain it again for the control cases. This times,
in a child process per mode, the phases of that pattern with pycuda alone (no cuprobe code):
  create   retain + push (the context comes to life)
  allocs   N allocations, each memset and synchronised (as a poisoned re-run's device_alloc does)
  frees    freeing them
  release  pop + detach (mode `release`: the context is destroyed) or pop (mode `hold`: it stays)
  again    retain + push for a second block (a new context after `release`), 6 allocations, pop
  total    the child's wall, from before `import pycuda` to its exit, as the parent saw it
Usage (GPU box, from the project root):
  python3 tests/gpu/context_churn.py [--n 768] [--repeats 3] [--sanitizer /usr/local/cuda/bin/compute-sanitizer]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

PHASES = ("create", "allocs", "frees", "release", "again")


def child(mode: str, n: int) -> None:
    marks = {"start": time.perf_counter()}
    import pycuda.driver as cuda

    cuda.init()
    t = time.perf_counter()
    ctx = cuda.Device(0).retain_primary_context()
    ctx.push()
    cuda.Context.synchronize()
    marks["create"] = time.perf_counter() - t
    t = time.perf_counter()
    bufs = []
    for _ in range(n):
        b = cuda.mem_alloc(64 << 10)
        cuda.memset_d8(b, 0xFF, 64 << 10)
        cuda.Context.synchronize()
        bufs.append(b)
    marks["allocs"] = time.perf_counter() - t
    t = time.perf_counter()
    for b in bufs:
        b.free()
    marks["frees"] = time.perf_counter() - t
    t = time.perf_counter()
    ctx.pop()
    if mode == "release":
        ctx.detach()
    marks["release"] = time.perf_counter() - t
    t = time.perf_counter()
    ctx2 = cuda.Device(0).retain_primary_context() if mode == "release" else ctx
    ctx2.push()
    small = [cuda.mem_alloc(1024) for _ in range(6)]
    cuda.Context.synchronize()
    for b in small:
        b.free()
    ctx2.pop()
    marks["again"] = time.perf_counter() - t
    print("PHASES " + json.dumps(marks), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=768)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sanitizer", default=None, help="also run each mode under this compute-sanitizer (initcheck)")
    ap.add_argument("--child", choices=("release", "hold"))
    args = ap.parse_args()
    if args.child:
        child(args.child, args.n)
        return 0
    launchers = [("bare", [])]
    if args.sanitizer:
        launchers.append(("initcheck", [args.sanitizer, "--tool", "initcheck", "--print-limit", "0"]))
    print(f"{'under':<10} {'mode':<8} " + " ".join(f"{p:>8}" for p in (*PHASES, "total")) + "   (median s)")
    for under, prefix in launchers:
        rows: dict[str, list[dict[str, float]]] = {"release": [], "hold": []}
        for _ in range(args.repeats):
            for mode in rows:  # alternated, so drift hits both
                cmd = [*prefix, sys.executable, __file__, "--child", mode, "--n", str(args.n)]
                t = time.perf_counter()
                out = subprocess.run(cmd, capture_output=True, text=True, check=False)
                wall = time.perf_counter() - t
                line = next((x for x in out.stdout.splitlines() if x.startswith("PHASES ")), None)
                if line is None:
                    print(f"{under} {mode}: no timing (exit {out.returncode}): {out.stderr[-300:]}")
                    continue
                rows[mode].append({**json.loads(line[7:]), "total": wall})
        for mode, runs in rows.items():
            if runs:
                med = {p: statistics.median(r[p] for r in runs) for p in (*PHASES, "total")}
                print(f"{under:<10} {mode:<8} " + " ".join(f"{med[p]:8.3f}" for p in (*PHASES, "total")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
