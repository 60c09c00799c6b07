"""Benchmark: the gate on a project's own pytest suite, side by side in one run.

Runs the same selection of a project's tests four ways and prints their wall times and ratios:
  bare            `python -m pytest SELECTION` in one process (no sanitizer);
  sanitizer       `compute-sanitizer --tool T python -m pytest SELECTION` in one process, as a user would type it;
  cuprobe test    `cuprobe gate --local` on a suite with `per = "test"`: one sanitized process per test;
  cuprobe file    the same suite with `per = "file"` (the default): one process per file, tests run alone only
                  where a file shows something.
The target on a clean selection: `cuprobe file` within 1.25x of `sanitizer`.

With --plant, the project is copied and given one more test file (tests of its own, next to the project's): a Triton
kernel whose store lost its mask (out of bounds by 24 floats: the caching allocator's slack hides it from a bare
run, not from memcheck), two clean tests around it, and with --plant-crash a test that kills its own process with
SIGSEGV and one that hangs; the gate must name the planted test alone and still judge the others.

On a GPU machine with the project checked out at a commit (the table in bench/README.md names the project and commit):
    python bench/own_suite.py --project PATH [--select tests/test_x.py ...] [--tool memcheck] [--plant]
        [--plant-crash] [--first N] [--args ...] [--timeout-s 600] [--sanitizer PATH] [--skip test,sanitizer]
On a machine without a GPU, `--smoke` runs a small generated project bare through every mode but the sanitizer's,
checking the script's own assertions (the CI does this).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from junitparser import JUnitXml

from cuprobe.service.owntests.discover import pytest_node_ids

ROOT = Path(__file__).resolve().parent.parent

PLANTED = '''
"""Planted by cuprobe's benchmark: one defect the sanitizer must name, and tests around it that must stay clean."""
import os
import signal
import time

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr, MASKED: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if MASKED:
        tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)
    else:
        tl.store(dst + offs, tl.load(src + offs, mask=offs < n))  # the store lost its mask: 24 floats past the end


def _run(masked):
    src = torch.arange(1000, device="cuda", dtype=torch.float32)
    dst = torch.empty(1000, device="cuda", dtype=torch.float32)
    _copy[(1,)](src, dst, 1000, BLOCK=1024, MASKED=masked)
    torch.cuda.synchronize()
    assert torch.equal(dst, src)


def test_planted_clean_before():
    _run(masked=True)


def test_planted_masked_out_store():
    _run(masked=False)


def test_planted_clean_after():
    _run(masked=True)
'''

CRASH = '''

def test_planted_segfault():
    _run(masked=True)
    os.kill(os.getpid(), signal.SIGSEGV)


def test_planted_hang():
    _run(masked=True)
    time.sleep(24 * 3600)
'''

SMOKE_TESTS = {
    "tests/test_a.py": "def test_one():\n    assert 1 + 1 == 2\n\n\ndef test_two():\n    assert sum(range(4)) == 6\n",
    "tests/test_b.py": "def test_three():\n    assert 'ab'.upper() == 'AB'\n",
}


def _timed(
    command: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 7200
) -> tuple[float, int, str]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    return time.perf_counter() - started, done.returncode, done.stdout + done.stderr


def _suite(path: Path, project: Path, args: argparse.Namespace, per: str, control: bool) -> None:
    lines = [f'name = "own-{per}"', ""]
    if control:  # a memcheck positive control, as the gate requires for every tool it uses
        lines += ["[[probe]]", 'name = "memcheck-control"', 'probe = "planted"', f'tool = "{args.tool}"',
                  "control = true", 'params = { defect = "oob" }', ""]
    lines += ["[[test]]", 'name = "suite"', 'kind = "pytest"', f'tool = "{args.tool}"', f'cwd = "{project}"',
              f"paths = {json.dumps(args.select)}", f'per = "{per}"', f"timeout_s = {args.timeout_s}",
              f'python = "{args.python}"']
    if args.args:
        lines.append(f"args = {json.dumps(args.args)}")
    path.write_text("\n".join(lines) + "\n")


def _gate(project: Path, work: Path, args: argparse.Namespace, per: str) -> dict[str, Any]:
    suite = work / f"suite-{per}.toml"
    _suite(suite, project, args, per, control=args.tool != "none")
    junit = work / f"junit-{per}.xml"
    command = [sys.executable, "-m", "cuprobe", "gate", str(suite), "--local", "--junit", str(junit),
               "--workdir", str(work / f"runs-{per}")]
    env = dict(os.environ)
    if args.sanitizer:
        env["CUPROBE_SANITIZER_PATH"] = args.sanitizer
    seconds, code, output = _timed(command, ROOT, env)
    cases: dict[str, str] = {}
    if junit.is_file():
        for suite_xml in JUnitXml.fromfile(str(junit)):
            for case in suite_xml:
                said = [type(r).__name__.lower() for r in case.result] or ["passed"]
                cases[f"{case.classname}::{case.name}"] = said[0]
    return {"seconds": seconds, "exit": code, "cases": cases, "output": output[-4000:]}


def _project(args: argparse.Namespace, work: Path) -> Path:
    if args.smoke:
        project = work / "smoke-project"
        for name, text in SMOKE_TESTS.items():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            (project / name).write_text(text)
        return project
    source = Path(args.project).resolve()
    if not (args.plant or args.plant_crash):
        return source
    project = work / source.name
    shutil.copytree(source, project, ignore=shutil.ignore_patterns(".git", "__pycache__"))
    (project / "tests").mkdir(exist_ok=True)
    (project / "tests" / "test_cuprobe_planted.py").write_text(
        textwrap.dedent(PLANTED) + (textwrap.dedent(CRASH) if args.plant_crash else "")
    )
    args.select = [*args.select, "tests/test_cuprobe_planted.py"]
    return project


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", help="the project's checkout (its tests run from there)")
    parser.add_argument("--select", nargs="*", default=["tests"], help="what pytest collects (paths, node ids)")
    parser.add_argument("--args", nargs="*", default=[], help="extra pytest arguments for every run")
    parser.add_argument("--first", type=int, help="only the first N tests pytest collects from each selected file")
    parser.add_argument("--tool", default="memcheck")
    parser.add_argument("--python", default=sys.executable, help="the project's interpreter")
    parser.add_argument("--sanitizer", help="compute-sanitizer to use (default: cuprobe's choice)")
    parser.add_argument("--timeout-s", type=float, default=600.0, help="per test")
    parser.add_argument("--plant", action="store_true", help="add a test file with a planted defect")
    parser.add_argument("--plant-crash", action="store_true", help="also a test that segfaults and one that hangs")
    parser.add_argument("--skip", default="", help="modes to leave out, comma-separated: bare,sanitizer,test,file")
    parser.add_argument("--json", help="write the measurements here as JSON")
    parser.add_argument("--smoke", action="store_true", help="a small generated project, bare (no GPU needed)")
    args = parser.parse_args()
    if args.smoke:
        args.tool, args.select, args.skip = "none", ["tests"], "sanitizer"
    elif not args.project:
        parser.error("--project is required (or --smoke)")
    skip = set(filter(None, args.skip.split(",")))
    with tempfile.TemporaryDirectory(prefix="cuprobe-own-suite-") as tmp:
        work = Path(tmp)
        project = _project(args, work)
        if args.first:
            args.select = _first(project, args)
        pytest_cmd = [args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.args, *args.select]
        rows: dict[str, dict[str, Any]] = {}
        if "bare" not in skip:
            seconds, code, output = _timed(pytest_cmd, project)
            rows["bare"] = {"seconds": seconds, "exit": code, "output": output[-2000:]}
            print(f"bare: {seconds:.1f} s, exit {code}", flush=True)
        if "sanitizer" not in skip:
            sanitizer = args.sanitizer or shutil.which("compute-sanitizer") or "compute-sanitizer"
            env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1")
            seconds, code, output = _timed([sanitizer, "--tool", args.tool, *pytest_cmd], project, env)
            summary = [line for line in output.splitlines() if "ERROR SUMMARY" in line]
            rows["sanitizer"] = {"seconds": seconds, "exit": code, "summary": summary[-1:] or ["none"]}
            print(f"sanitizer: {seconds:.1f} s, exit {code}, {rows['sanitizer']['summary'][0]}", flush=True)
        for per in ("file", "test"):
            if per not in skip:
                rows[f"cuprobe {per}"] = _gate(project, work, args, per)
                print(f"cuprobe {per}: {rows[f'cuprobe {per}']['seconds']:.1f} s", flush=True)
        _print(rows)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=2, default=str))
        return _check(rows, args)


def _first(project: Path, args: argparse.Namespace) -> list[str]:
    """The first `args.first` node ids of each file pytest collects from the selection."""
    command = [args.python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args.args, *args.select]
    _, code, output = _timed(command, project)
    if code != 0:
        raise SystemExit(f"collection failed ({code}): {output[-2000:]}")
    per_file: dict[str, list[str]] = {}
    for node in pytest_node_ids(output):
        per_file.setdefault(node.partition("::")[0], []).append(node)
    return [node for nodes in per_file.values() for node in nodes[: args.first]]


def _print(rows: dict[str, dict[str, Any]]) -> None:
    bare = rows.get("bare", {}).get("seconds")
    sanitized = rows.get("sanitizer", {}).get("seconds")
    print("| mode | wall s | x bare | x sanitizer one process | exit | tests |")
    print("|---|---|---|---|---|---|")
    for mode, row in rows.items():
        cases = row.get("cases") or {}
        counts = ", ".join(f"{n} {k}" for k, n in sorted(_count(cases).items())) if cases else "-"
        ratios = [f"{row['seconds'] / base:.2f}" if base else "-" for base in (bare, sanitized)]
        print(f"| {mode} | {row['seconds']:.1f} | {ratios[0]} | {ratios[1]} | {row['exit']} | {counts} |")
    for mode in ("cuprobe test", "cuprobe file"):
        named = sorted(k for k, v in (rows.get(mode, {}).get("cases") or {}).items() if v != "passed")
        if named:
            print(f"{mode}: not passed: " + "; ".join(f"{k} ({rows[mode]['cases'][k]})" for k in named))


def _count(cases: dict[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for said in cases.values():
        out[said] = out.get(said, 0) + 1
    return out


def _check(rows: dict[str, dict[str, Any]], args: argparse.Namespace) -> int:
    """The script's own assertions: both gate modes judged the same tests the same way, and on the smoke project
    every test was judged clean."""
    per_test, per_file = rows.get("cuprobe test", {}).get("cases"), rows.get("cuprobe file", {}).get("cases")
    problems = []
    if per_test is not None and per_file is not None and per_test != per_file:
        differ = sorted(k for k in set(per_test) | set(per_file) if per_test.get(k) != per_file.get(k))
        problems.append(f"per test and per file judged {len(differ)} test(s) differently: {differ[:5]}")
    if args.smoke:
        if not per_file or set(per_file.values()) != {"passed"} or len(per_file) != 3:
            problems.append(f"the smoke project's 3 tests were not all judged clean: {per_file}")
        if rows["cuprobe file"]["exit"] != 0:
            problems.append(f"the gate exited {rows['cuprobe file']['exit']}: {rows['cuprobe file']['output']}")
    for problem in problems:
        print(f"CHECK FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
