"""A reproduction of the multi-process stall without cuprobe: K compute-sanitizer initcheck processes on one GPU.

    python3 tests/gpu/stall_repro.py --procs 2,4,8 --rounds 3 --iters 96 --out DIR [--sanitizer PATH]

Each process is `compute-sanitizer --tool initcheck --show-backtrace device --xml --save FILE python3 THIS --target`
(its own block of ports, as cuprobe runs them): the target uses pycuda only (no torch, no cuprobe), compiles
kernels/narrow_matmul.cu and runs `iters` cases of the unguarded narrow matmul (m = k = tile = 32, n = 1, 2, ...;
each leaves the padding rows of w unwritten, so initcheck reports every read of them), synchronising after each
launch, and appends one line per finished case to its progress file. The parent starts the K processes together
and watches the progress files: a process alive with no new line for `--stall-s` is a stall, and before it is
killed the parent records its state (/proc status and wait channel per thread, py-spy's Python and native stacks
when py-spy is installed, nvidia-smi's view of the GPU). Prints one line per process and a table per K.

Exit code: 0 when no process stalled, 1 when one did (so a loop can stop at the first reproduction).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

KERNEL = Path(__file__).resolve().parents[2] / "kernels" / "narrow_matmul.cu"
M = K_DIM = TILE = 32
PORT_BASE, PORTS_EACH = 49152, 10


def target(iters: int, progress: Path) -> int:
    """The sanitized program: `iters` narrow-matmul launches, each synchronised; one progress line per case."""
    import numpy as np
    import pycuda.driver as cuda
    from pycuda.compiler import SourceModule

    cuda.init()
    context = cuda.Device(0).retain_primary_context()  # as cuprobe's probes (and torch) take it
    context.push()
    try:
        module = SourceModule(KERNEL.read_text(), options=["-lineinfo", f"-DTILE={TILE}"], no_extern_c=True)
        kernel = module.get_function("narrow_matmul_unguarded_f32")
        rng = np.random.default_rng(0)
        alive = []
        with progress.open("a", encoding="utf-8") as log:
            for i in range(iters):
                n = i % 128 + 1
                n_pad = -(-n // TILE) * TILE
                x_host = rng.standard_normal((M, K_DIM)).astype(np.float32)
                w_host = rng.standard_normal((n, K_DIM)).astype(np.float32)
                x = cuda.to_device(x_host)
                w = cuda.mem_alloc(n_pad * K_DIM * 4)
                y = cuda.mem_alloc(M * n * 4)
                cuda.memcpy_htod(w, w_host)  # rows n..n_pad stay unwritten
                kernel(x, w, y, np.int32(M), np.int32(K_DIM), np.int32(n), block=(TILE, TILE, 1),
                       grid=(n_pad // TILE, -(-M // TILE)))
                cuda.Context.synchronize()
                out = np.empty((M, n), dtype=np.float32)
                cuda.memcpy_dtoh(out, y)
                alive += [x, w, y]  # every buffer lives to the end, as in cuprobe's batched cases
                log.write(f"{i} n={n} {time.time():.3f}\n")
                log.flush()
        for buf in alive:
            buf.free()
    finally:
        context.pop()
        context.detach()
    return 0


@dataclass
class Run:
    index: int
    proc: subprocess.Popen[bytes]
    progress: Path
    xml: Path
    started: float
    lines: int = 0
    moved: float = 0.0
    stalled: bool = False
    ended: float | None = None


def _steady_ms(path: Path) -> float | None:
    """Milliseconds per case from the first finished case to the last (start-up left out), from the timestamps."""
    try:
        stamps = [float(line.split()[2]) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, IndexError, ValueError):
        return None
    return (stamps[-1] - stamps[0]) / (len(stamps) - 1) * 1e3 if len(stamps) > 1 else None


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def _snapshot(run: Run, out: Path) -> Path:
    """What a stalled process is doing: per-thread state and wait channel, py-spy stacks, the GPU's view."""
    report = out / f"stall-{run.proc.pid}.txt"
    parts = [f"stalled after case {run.lines} of its progress file, {time.monotonic() - run.moved:.1f} s quiet"]
    pids = [run.proc.pid, *_children(run.proc.pid)]
    for pid in pids:
        parts.append(f"== /proc/{pid}")
        try:
            parts.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:300])
            for task in sorted(Path(f"/proc/{pid}/task").iterdir()):
                stat = (task / "stat").read_text().split(") ")[-1].split()
                wchan = (task / "wchan").read_text() if (task / "wchan").exists() else "?"
                parts.append(f"  thread {task.name}: state {stat[0]} utime {stat[11]} stime {stat[12]} wchan {wchan}")
        except OSError as exc:
            parts.append(f"  unreadable: {exc}")
        if shutil.which("py-spy"):
            done = subprocess.run(["py-spy", "dump", "--native", "--pid", str(pid)], capture_output=True, text=True,
                                  timeout=60)
            parts += ["  py-spy dump --native:", done.stdout, done.stderr]
    if shutil.which("nvidia-smi"):
        done = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu,memory.used", "--format=csv"],
                              capture_output=True, text=True, timeout=30)
        parts += ["== nvidia-smi", done.stdout]
    report.write_text("\n".join(parts), encoding="utf-8")
    return report


def _children(pid: int) -> list[int]:
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        try:
            kids = [int(c) for c in Path(f"/proc/{parent}/task/{parent}/children").read_text().split()]
        except OSError:
            kids = []
        found += kids
        frontier += kids
    return found


def one_round(k: int, round_no: int, args: argparse.Namespace, sanitizer: str) -> list[Run]:
    out: Path = args.out / f"k{k}-r{round_no}"
    out.mkdir(parents=True, exist_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    runs = []
    for i in range(k):
        progress, xml = out / f"progress-{i}.txt", Path(args.xml_dir) / f"k{k}-r{round_no}-{i}.xml"
        port = str(PORT_BASE + PORTS_EACH * i)
        cmd = [sanitizer, "--tool", "initcheck", "--show-backtrace", "device", "--port", port,
               "--max-connections", str(PORTS_EACH), "--xml", "--save", str(xml), "--print-limit", "0",
               sys.executable, str(Path(__file__).resolve()), "--target", "--iters", str(args.iters),
               "--progress", str(progress)]
        log = (out / f"sanitizer-{i}.log").open("wb")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        now = time.monotonic()
        runs.append(Run(i, proc, progress, xml, now, moved=now))
    deadline = time.monotonic() + args.limit_s
    while any(r.ended is None for r in runs) and time.monotonic() < deadline:
        time.sleep(0.5)
        for run in runs:
            if run.ended is not None:
                continue
            if run.proc.poll() is not None:
                run.ended, run.lines = time.monotonic(), _lines(run.progress)
                continue
            lines = _lines(run.progress)
            if lines != run.lines:
                run.lines, run.moved = lines, time.monotonic()
            elif lines > 0 and time.monotonic() - run.moved > args.stall_s:
                run.stalled = True
                report = _snapshot(run, out)
                print(f"  STALL k={k} round={round_no} process {run.index} (pid {run.proc.pid}) after {lines} cases: "
                      f"{report}", flush=True)
                os.killpg(run.proc.pid, signal.SIGKILL)
                run.proc.wait()
                run.ended = time.monotonic()
    for run in runs:
        if run.ended is None:  # the round's limit: not a stall by the rule above (no first case, or slow)
            os.killpg(run.proc.pid, signal.SIGKILL)
            run.proc.wait()
            run.ended = time.monotonic()
        run.xml.unlink(missing_ok=True)
        state = "STALLED" if run.stalled else f"exit {run.proc.returncode}"
        print(f"  k={k} round={round_no} process {run.index}: {run.lines}/{args.iters} cases, "
              f"{run.ended - run.started:.1f} s, {state}", flush=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # every process of the round, sanitizer and target
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    wall = max(r.ended or 0.0 for r in runs) - min(r.started for r in runs)
    print(f"  k={k} round={round_no}: {cpu:.1f} CPU s in {wall:.1f} s = {cpu / wall:.1f} cores busy on average",
          flush=True)
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--progress", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--iters", type=int, default=96, help="cases per process")
    parser.add_argument("--procs", default="2,4", help="K values, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stall-s", type=float, default=20.0, help="no new case for this long: a stall")
    parser.add_argument("--limit-s", type=float, default=120.0, help="per round")
    parser.add_argument("--out", type=Path, default=Path("stall-repro"))
    parser.add_argument("--xml-dir", default="/tmp")
    parser.add_argument("--sanitizer", default=shutil.which("compute-sanitizer"))
    args = parser.parse_args()
    if args.target:
        return target(args.iters, args.progress)
    if not args.sanitizer:
        print("stall_repro.py: no compute-sanitizer on PATH; pass --sanitizer", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    table = []
    for k in (int(v) for v in args.procs.split(",")):
        runs = [run for r in range(args.rounds) for run in one_round(k, r, args, args.sanitizer)]
        whole = [r for r in runs if not r.stalled and r.lines == args.iters and r.ended]
        healthy = [r.ended - r.started for r in whole if r.ended]
        steady = [ms for r in whole if (ms := _steady_ms(r.progress)) is not None]
        table.append((k, len(runs), sum(r.stalled for r in runs), healthy, steady))
    # steady ms/case: one process's time per case once started; K processes together finish K cases in that time.
    print(f"\n{'K':>3} {'processes':>10} {'stalled':>8} {'median s (healthy)':>19} {'steady ms/case':>15} "
          f"{'cases/s, all K':>15}")
    for k, count, stalled, healthy, steady in table:
        median = f"{statistics.median(healthy):.1f}" if healthy else "-"
        ms = statistics.median(steady) if steady else None
        rate = f"{k / ms * 1e3:.1f}" if ms else "-"
        print(f"{k:>3} {count:>10} {stalled:>8} {median:>19} {ms if ms is None else round(ms, 1)!s:>15} {rate:>15}")
    return 1 if any(row[2] for row in table) else 0


if __name__ == "__main__":
    sys.exit(main())
