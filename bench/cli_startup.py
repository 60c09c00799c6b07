"""How long `cuprobe --version` and `cuprobe --help` take to answer, side by side with `python -c pass`.

    python bench/cli_startup.py [--repeats 20] [--json FILE] [--previous DIR]
    python bench/cli_startup.py --smoke

Each repeat runs every command once, in an order that rotates, as fresh processes of this virtual environment's
Python (the `cuprobe` console script beside it, else `python -m cuprobe.service.cli`), so a busy moment of the machine
falls on every row alike. The table gives each command's median and fastest wall time and its median less the median
of `python -c pass` (what starting Python and its site-packages cost, which no command can avoid). Target: the median
of `--version` and of `--help` under 0.3 s on a quiet 2-core machine; the exit status is 0 when both meet it.
`--previous DIR` adds the same two commands of another checkout of cuprobe (e.g. `git worktree add /tmp/before
COMMIT`), imported from DIR ahead of this one, to the same rotation. `--smoke` (CI) runs each command twice and checks
its output, not the target: a loaded CI machine is no measure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 0.3
TARGETED = ("cuprobe --version", "cuprobe --help")


def cuprobe_argv() -> list[str]:
    """How this environment starts cuprobe: its console script when installed, else the module."""
    script = Path(sys.executable).parent / "cuprobe"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "cuprobe.service.cli"]


# The console script's own lines, for a checkout that is not installed.
SCRIPT = "import sys; from cuprobe.service.cli.main import main; sys.argv[0] = 'cuprobe'; sys.exit(main())"
Row = tuple[list[str], str, dict[str, str]]


def commands(previous: Path | None) -> dict[str, Row]:
    """Each row's name, argv, a piece of the output that says it answered, and the environment it adds."""
    cuprobe = cuprobe_argv()
    rows: dict[str, Row] = {
        "python -c pass": ([sys.executable, "-c", "pass"], "", {}),
        "cuprobe --version": ([*cuprobe, "--version"], "cuprobe ", {}),
        "cuprobe --help": ([*cuprobe, "--help"], "Commands", {}),
        "cuprobe run --help": ([*cuprobe, "run", "--help"], "--tool", {}),
    }
    if previous is not None:
        path = {"PYTHONPATH": str(previous.resolve())}
        rows["previous --version"] = ([sys.executable, "-c", SCRIPT, "--version"], "cuprobe ", path)
        rows["previous --help"] = ([sys.executable, "-c", SCRIPT, "--help"], "Commands", path)
    return rows


def timed(argv: list[str], expect: str, extra: dict[str, str]) -> float:
    """Wall seconds of one run of `argv`; raises when it fails or does not print `expect`."""
    env = {**os.environ, "COLUMNS": "80", **extra}
    start = time.perf_counter()
    # From a folder of no checkout: `python -c` puts the working directory first on sys.path.
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir(), check=False)
    took = time.perf_counter() - start
    if done.returncode != 0 or expect not in done.stdout:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    return took


def measure(repeats: int, previous: Path | None) -> dict[str, list[float]]:
    rows = commands(previous)
    names = list(rows)
    times: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(repeats):
        shift = repeat % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(timed(*rows[name]))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="two repeats, output checked, no target")
    parser.add_argument("--json", type=Path, help="also write the measured seconds here")
    parser.add_argument("--previous", type=Path, help="another checkout of cuprobe, timed in the same rotation")
    args = parser.parse_args()
    repeats = 2 if args.smoke else args.repeats
    load = os.getloadavg()
    print(f"{os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {repeats} repeats")
    times = measure(repeats, args.previous)
    floor = statistics.median(times["python -c pass"])
    print(f"{'command':<22}{'median s':>10}{'fastest s':>11}{'over python':>13}  target")
    met = True
    for name, seconds in times.items():
        median = statistics.median(seconds)
        verdict = ""
        if name in TARGETED:
            verdict = f"< {TARGET_S} s: {'yes' if median < TARGET_S else 'NO'}"
            met &= median < TARGET_S
        print(f"{name:<22}{median:>10.3f}{min(seconds):>11.3f}{median - floor:>+13.3f}  {verdict}")
    if args.json:
        args.json.write_text(json.dumps({"load": load, "cores": os.cpu_count(), "seconds": times}, indent=1))
    return 0 if met or args.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
