"""Does a compute-sanitizer option make initcheck's records cheaper without changing them?

One record-heavy request (narrow-matmul, unguarded kernel only, a quarter of the 384-case grid's n values (every
fourth), m = k = tile = 32: about 15,900 uninitialized reads) runs under compute-sanitizer directly, with the
options cuprobe gives a sweep (--tool initcheck --print-limit 0 --xml --show-backtrace device) and each candidate
added, rounds alternating. Prints each run's wall time, XML size and records, the CPU seconds of the target and the
sanitizer front end together, and whether cuprobe's findings (signature, case, count) equal the first option set's.
From the project root on a GPU machine:
    python3 tests/gpu/record_options.py [--rounds 2] [--set options|console|control]
--set console compares what the sanitizer prints as text (--print-level, --log-file) on top of --demangle no;
--set control the kernel filter a confirming run adds for the confirmer's control; --set exit the harness's
--quick-exit.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.sweep import exit_s  # noqa: E402
from cuprobe.contract import Tool  # noqa: E402
from cuprobe.service.probing.launch import read_probe_result  # noqa: E402
from cuprobe.service.probing.runner import allocations_of  # noqa: E402
from cuprobe.service.sanitizer.parse import parse_xml  # noqa: E402

# --set options: the first session-13 candidates, each added to the sweep's options of that time.
OPTIONS: dict[str, list[str]] = {
    "as a sweep runs": [],
    "--demangle no": ["--demangle", "no"],
    "--num-callers-device 1": ["--num-callers-device", "1"],
    "--nvtx no": ["--nvtx", "no"],
    "--check-api-memory-access no": ["--check-api-memory-access", "no"],
}
# --set console: what the sanitizer prints as text beside the XML, each added to a sweep's options with the demangler
# off (service/probing/demangle.py). {out} is the run's folder.
CONSOLE: dict[str, list[str]] = {
    "--demangle no (a sweep now)": ["--demangle", "no"],
    "+ --print-level error": ["--demangle", "no", "--print-level", "error"],
    "+ --print-level fatal": ["--demangle", "no", "--print-level", "fatal"],
    "+ --log-file (a file)": ["--demangle", "no", "--log-file", "{out}/console.txt"],
}
# --set control: the option a confirming run adds for the confirmer's planted blind-spot case
# (service/probing/confirm.py control_options, under 2025.3), on top of a sweep's options with the demangler off.
CONTROL: dict[str, list[str]] = {
    "--demangle no (a sweep now)": ["--demangle", "no"],
    "+ --kernel-name-exclude kns=...": ["--demangle", "no", "--kernel-name-exclude", "kns=cuprobe_hidden_write"],
}
# --set exit: the probe harness's own --quick-exit (Settings.quick_exit), which goes to the target's command, not the
# sanitizer's: os._exit once the result is written, no Python finalizers nor CUDA context teardown.
EXIT: dict[str, list[str]] = {
    "--demangle no (a sweep now)": ["--demangle", "no"],
    "+ the harness's --quick-exit": ["--demangle", "no", "--", "--quick-exit"],
}
SETS = {"options": OPTIONS, "console": CONSOLE, "control": CONTROL, "exit": EXIT}
CANDIDATES = OPTIONS


def run(sanitizer: str, extra: list[str], n: list[int], out: Path) -> tuple[float, float, float]:
    """One run: wall seconds, CPU seconds of the sanitizer and its target together, XML megabytes. What `extra` has
    after a `--` goes to the probe's command."""
    out.mkdir(parents=True)
    extra, target = (extra[: extra.index("--")], extra[extra.index("--") + 1 :]) if "--" in extra else (extra, [])
    params = json.dumps({"m": 32, "k": 32, "tile": 32, "n": n, "variants": ["unguarded"]})
    cmd = [sanitizer, "--tool", "initcheck", "--print-limit", "0", "--error-exitcode", "86", "--xml",
           "--save", str(out / "run.xml"), "--show-backtrace", "device",
           *(part.format(out=out) for part in extra), "--",
           sys.executable, "-m", "cuprobe.probes", "narrow-matmul", "--tool", "initcheck", "--params", params,
           "--out", str(out / "result.json"), *target]
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    with (out / "stdout.txt").open("wb") as stdout, (out / "stderr.txt").open("wb") as stderr:
        code = subprocess.run(cmd, cwd=ROOT, env=env, stdout=stdout, stderr=stderr, check=False).returncode
    if code not in (0, 86):
        print(f"exit {code}: {(out / 'stderr.txt').read_text()[-800:]} {(out / 'stdout.txt').read_text()[-800:]}")
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu, (out / "run.xml").stat().st_size / 1e6 if (out / "run.xml").exists() else 0.0


def console(out: Path) -> str:
    """What the sanitizer wrote as text (stdout, or the --log-file): bytes, lines, and its ERROR SUMMARY line."""
    parts = []
    for name in ("stdout.txt", "console.txt"):
        if (out / name).exists():
            text = (out / name).read_text(errors="replace")
            summary = [line for line in text.splitlines() if "ERROR SUMMARY" in line]
            last = summary[-1] if summary else "no summary"
            parts.append(f"{name} {len(text)} B, {text.count(chr(10))} lines, {last}")
    return "; ".join(parts)


def exit_tail(out: Path) -> str:
    """From the result.json's write (the harness's last act) to the run.xml's last (the sanitizer's wrap-up)."""
    try:
        tail = exit_s(out)
    except OSError:
        return "exit ?"
    return f"exit {tail:.2f} s after the result"


def findings(out: Path) -> tuple[int, list[tuple[str, str | None, int]]]:
    probe, _ = read_probe_result(out / "result.json")
    parsed = parse_xml(out / "run.xml", tool=Tool.INITCHECK, roots=[str(ROOT)],
                       allocations=allocations_of(probe) if probe else [], max_records=100_000)
    return parsed.records, sorted((f.signature, f.case, f.count) for f in parsed.findings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--set", choices=sorted(SETS), default="options", help="which candidates to run")
    args = parser.parse_args()
    global CANDIDATES
    CANDIDATES = SETS[args.set]
    sanitizer = os.environ.get("CUPROBE_SANITIZER_PATH", "compute-sanitizer")
    n = list(range(1, 129))[0::4]
    print(f"narrow-matmul unguarded, n = {n}, initcheck, {sanitizer}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="cuprobe-record-options-"))
    walls: dict[str, list[float]] = {name: [] for name in CANDIDATES}
    cpus: dict[str, list[float]] = {name: [] for name in CANDIDATES}
    seen: dict[str, tuple[int, list[tuple[str, str | None, int]]]] = {}
    sizes: dict[str, float] = {}
    for r in range(args.rounds):
        for i, (name, extra) in enumerate(CANDIDATES.items()):
            out = work / f"{i}-{r}"
            wall, cpu, size = run(sanitizer, extra, n, out)
            walls[name].append(wall)
            cpus[name].append(cpu)
            sizes[name] = size
            seen.setdefault(name, findings(out))
            print(f"round {r} {name:<32} {wall:6.2f} s wall, {cpu:6.2f} CPU s, {size:5.1f} MB, "
                  f"{seen[name][0]} records, {exit_tail(out)}; {console(out)}", flush=True)
    first = next(iter(CANDIDATES))
    header = f"{'options added':<32}{'wall (median)':>14}{'CPU s':>8}{'vs sweep':>10}{'MB':>7}{'records':>9}"
    print(f"\n{header}  same findings")
    base = statistics.median(walls[first])
    for name in CANDIDATES:
        wall = statistics.median(walls[name])
        same = "yes" if seen[name][1] == seen[first][1] else "NO"
        print(f"{name:<32}{wall:>14.2f}{statistics.median(cpus[name]):>8.1f}{wall / base:>9.2f}x"
              f"{sizes[name]:>7.1f}{seen[name][0]:>9}  {same}")
    if not seen[first][0]:  # the kernel must read padding: no records means the run did not happen
        print("ERROR: no records with the sweep's options: the runs did not happen as meant")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
