"""The user's own tests as suite entries: discover pytest, ctest and gtest tests, one command-probe run each."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from cuprobe import internal_env
from cuprobe.contract import Tool
from cuprobe.service.models import SanitizerOptions, Severity

TestKind = Literal["pytest", "ctest", "gtest", "command"]
DISCOVERY_TIMEOUT_S = 600.0
# Time the sanitizer needs around a command's own limit (its start-up and the XML) before cuprobe kills it all.
SANITIZER_MARGIN_S = 60.0
# A run's limit is a day, the sanitizer's margin included.
MAX_TIMEOUT_S = 24 * 3600 - SANITIZER_MARGIN_S


class DiscoveryError(ValueError):
    """Discovery could not list the tests; the message names the entry, the command and what it printed."""


# The keys only some kinds read: any other kind refuses them rather than ignoring them (a ctest entry given gtest's
# `filter` would otherwise run every test).
KIND_KEYS: dict[str, set[str]] = {
    "pytest": {"paths", "markers", "python", "per"},
    "ctest": {"build_dir", "regex", "per"},
    "gtest": {"binary", "filter", "per"},
    "command": {"argv"},
}


class TestEntry(BaseModel):
    """A `[[test]]` table: the user's tests of one kind, each run in its own process under `tool`."""

    model_config = ConfigDict(extra="forbid")
    __test__ = False  # not a pytest test class

    name: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    kind: TestKind
    tool: Tool
    cwd: str | None = Field(None, description="working directory; relative to where cuprobe gate runs")
    env: dict[str, str] = Field(default_factory=dict, description="added to every test process's environment")
    timeout_s: float = Field(
        600,
        gt=0,
        le=MAX_TIMEOUT_S,
        description="per test (a file's process: its tests' sum); the sanitizer gets 60 s more",
    )
    repeats: int = Field(1, ge=1, le=50)
    fail_on: Severity | None = Field(None, description="error (default) or warning: what fails the gate")
    options: SanitizerOptions = Field(default_factory=SanitizerOptions)
    control: bool = Field(False, description="a known defect the tool must see (needs `expect`)")
    expect: str | None = Field(None, description="with control: the finding kind the tool must report")
    expect_exit: Annotated[StrictInt, Field(ge=0, le=255)] | Literal["any"] = Field(
        0, description='exit status each process must end with (0-255), or "any"'
    )
    per: Literal["file", "test", "binary"] | None = Field(
        None,
        description='pytest: "file" (default: each file in one process, its tests run alone only where it shows '
        'anything) or "test"; ctest/gtest: "test" (default) or "binary"',
    )
    args: list[str] = Field(default_factory=list, description="extra arguments for every test process")
    gpu: bool = Field(
        True, description="with tool none: false runs the tests on a CPU worker of the service (they need no GPU)"
    )
    # pytest
    paths: list[str] = Field(default_factory=list, description="pytest: files or directories to collect")
    markers: str | None = Field(None, description="pytest: -m expression")
    python: str | None = Field(
        None, description="pytest: the interpreter (default: the project's .venv or venv, $VIRTUAL_ENV's, cuprobe's)"
    )
    # ctest
    build_dir: str | None = Field(None, description="ctest: the CMake build directory")
    regex: str | None = Field(None, description="ctest: -R regular expression")
    # gtest
    binary: str | None = Field(None, description="gtest: the test binary")
    filter: str | None = Field(None, description="gtest: --gtest_filter for discovery")
    # command
    argv: list[str] = Field(default_factory=list, description="command: the executable and its arguments")

    @model_validator(mode="after")
    def _fields_of_kind(self) -> TestEntry:
        needs = {"pytest": "paths", "ctest": "build_dir", "gtest": "binary", "command": "argv"}[self.kind]
        if not getattr(self, needs):
            raise ValueError(f"a {self.kind} entry needs `{needs}`")
        others = sorted(
            f"`{key}` ({', '.join(k for k, keys in KIND_KEYS.items() if key in keys)})"
            for key in self.model_fields_set
            if any(key in keys for keys in KIND_KEYS.values()) and key not in KIND_KEYS[self.kind]
        )
        if others:
            raise ValueError(f"a {self.kind} entry does not use {', '.join(others)}: those keys belong to other kinds")
        if self.per is None:
            self.per = "file" if self.kind == "pytest" else "test"
        allowed = ("file", "test") if self.kind == "pytest" else ("test", "binary")
        if self.per not in allowed:
            raise ValueError(f"per = {self.per!r}: a {self.kind} entry runs per {' or per '.join(allowed)}")
        if self.control and not self.expect:
            raise ValueError("control = true needs `expect`: the finding kind the tool must report")
        if self.expect and not self.control:
            raise ValueError("`expect` is read only with control = true (a known defect the tool must report)")
        if self.tool is Tool.NONE and self.control:
            raise ValueError("a bare run (tool none) cannot be a positive control")
        if not self.gpu and self.tool is not Tool.NONE:
            raise ValueError(f"gpu = false needs tool = \"none\": {self.tool.value} runs only on a GPU")
        return self


class TestCommand(BaseModel):
    """One process of a test entry: its case id (node id, test name, binary) and command line."""

    model_config = ConfigDict(frozen=True)
    __test__ = False

    case: str
    argv: list[str]
    cwd: str
    env: dict[str, str] = Field(default_factory=dict)
    expect_any_exit: bool = Field(False, description="the test is expected to fail (ctest's WILL_FAIL)")
    not_run_exits: dict[int, str] = Field(
        default_factory=dict, description="this test's own exit statuses that say it did not run (SKIP_RETURN_CODE)"
    )
    not_run_output: str | None = Field(None, description="output that says it skipped itself (SKIP_REGULAR_EXPRESSION)")
    pass_output: str | None = Field(None, description="output it must print to pass (PASS_REGULAR_EXPRESSION)")
    fail_output: str | None = Field(None, description="output that fails it (FAIL_REGULAR_EXPRESSION)")
    env_modifications: list[str] = Field(default_factory=list, description="ctest's ENVIRONMENT_MODIFICATION")


# What says a test process never ran a test, per kind. pytest's exit statuses: 2 interrupted, 3 internal error,
# 4 usage error (e.g. a node id it cannot find), 5 no tests collected. gtest runs nothing and exits 0 when its filter
# matches no enabled test.
NOT_RUN_EXITS: dict[str, dict[int, str]] = {
    "pytest": {
        2: "pytest: interrupted",
        3: "pytest: internal error",
        4: "pytest: usage error",
        5: "pytest: no tests collected",
    },
}
# What a test process prints when its test did not run (each process runs one test): nothing matched, or the test
# was skipped (pytest's summary with only skips; gtest's SKIPPED line). An xfail whose body ran is not here; one
# that never ran its body is: `xfail(run=False)` (`[NOTRUN]`) or an xfail raised before the call (`at setup of`),
# as the short summary that XFAIL_REPORT asks for names them (pytest 7 puts the reason on its own line).
NOT_RUN_OUTPUT: dict[str, str] = {
    "pytest": r"^=*\s*\d+ skipped(?:, \d+ (?:deselected|warnings?))* in [\d.]+s\b"
    r"|^XFAIL(?:ED)? (?:at setup of |.*\[NOTRUN\]).*|^\s+\[NOTRUN\].*",
    "gtest": r"^\[=+\] 0 tests from 0 test (?:suites|cases) ran|^\[  SKIPPED \] \d+ tests?, listed below",
}


def _run(entry: TestEntry, argv: list[str], cwd: str, env: dict[str, str] | None = None) -> str:
    try:
        environ = {**os.environ, **(env or {})}
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=DISCOVERY_TIMEOUT_S, env=environ)
    except (OSError, subprocess.SubprocessError) as exc:
        raise DiscoveryError(f"[[test]] {entry.name}: `{shlex.join(argv)}` in {cwd} failed: {exc}") from exc
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip()[-1500:]
        raise DiscoveryError(
            f"[[test]] {entry.name}: `{shlex.join(argv)}` in {cwd} exited {done.returncode}: {tail or 'no output'}"
        )
    return done.stdout


def _absolute(path: str, base: str) -> str:
    return str((Path(base) / path).resolve()) if not os.path.isabs(path) else path


def pytest_node_ids(text: str) -> list[str]:
    """Node ids from `pytest --collect-only -q` output: the lines before the blank line and the count."""
    ids = []
    for line in text.splitlines():
        if not line.strip():
            break
        if "::" in line:
            ids.append(line.strip())
    return ids


# A pytest plugin that writes the rootdir, which node ids are relative to, where ROOTDIR_FILE_ENV says.
ROOTDIR_FILE_ENV = internal_env.PYTEST_ROOTDIR_FILE
ROOTDIR_PLUGIN = f"""import os


def pytest_collection_finish(session):
    with open(os.environ["{ROOTDIR_FILE_ENV}"], "w", encoding="utf-8") as out:
        out.write(str(session.config.rootpath))
"""


def _from_cwd(node: str, rootdir: Path | None, cwd: str) -> str:
    """Node id `node` (its path relative to pytest's rootdir) as an argument given in `cwd`: pytest reads a node id's
    path from where it is invoked, so a cwd below or beside the rootdir needs the path rewritten."""
    if rootdir is None:
        return node
    path, sep, rest = node.partition("::")
    return os.path.relpath(rootdir / path, cwd) + sep + rest


VENV_NAMES = (".venv", "venv")


def project_python(cwd: str, environ: Mapping[str, str] = os.environ) -> str:
    """The interpreter a project's tests run with when its entry names none: a virtual environment in `cwd` or a
    folder above it (up to the repository's root: `.venv`, `venv`), else the active one ($VIRTUAL_ENV), else the
    interpreter cuprobe runs in."""
    here = Path(cwd).resolve()
    for folder in (here, *here.parents):
        for name in VENV_NAMES:
            if (folder / name / "bin" / "python").is_file():
                return str(folder / name / "bin" / "python")
        if (folder / ".git").exists():
            break
    if (active := environ.get("VIRTUAL_ENV")) and (Path(active) / "bin" / "python").is_file():
        return str(Path(active) / "bin" / "python")
    return sys.executable


def _pytest(entry: TestEntry, cwd: str) -> list[TestCommand]:
    python = entry.python or project_python(cwd)
    base = [python, "-m", "pytest", "-p", "no:cacheprovider"]
    collect = [*base, "--collect-only", "-q", *entry.paths, *(["-m", entry.markers] if entry.markers else [])]
    with tempfile.TemporaryDirectory(prefix="cuprobe-collect-") as tmp:
        (Path(tmp) / "cuprobe_rootdir.py").write_text(ROOTDIR_PLUGIN, encoding="utf-8")
        found = Path(tmp) / "rootdir.txt"
        path = os.pathsep.join(p for p in (tmp, {**os.environ, **entry.env}.get("PYTHONPATH", "")) if p)
        env = {**entry.env, "PYTHONPATH": path, ROOTDIR_FILE_ENV: str(found)}
        ids = pytest_node_ids(_run(entry, [*collect[:3], "-p", "cuprobe_rootdir", *collect[3:]], cwd, env))
        rootdir = Path(found.read_text(encoding="utf-8")) if found.is_file() else None
    args = with_xfail_report(entry.args)
    return [
        TestCommand(case=node, argv=[*base, "-q", *args, _from_cwd(node, rootdir, cwd)], cwd=cwd, env=entry.env)
        for node in ids
    ]


# pytest's short summary of xfails, which tells an xfail that never ran its body from one that did (NOT_RUN_OUTPUT).
XFAIL_REPORT = "x"


def with_xfail_report(args: list[str]) -> list[str]:
    """The test's own pytest arguments with xfails in the short summary: `-rx` first where they give no `-r` (theirs,
    later, would replace it), else `x` added to each `-r` of theirs that reports neither xfails nor all."""
    out, chars_next, given = [], False, False
    for arg in args:
        if chars_next or (arg.startswith("-r") and len(arg) > 2):
            chars = arg if chars_next else arg[2:]
            given = True
            if not set(chars) & {XFAIL_REPORT, "a", "A"}:
                chars += XFAIL_REPORT
            out.append(chars if chars_next else "-r" + chars)
            chars_next = False
            continue
        chars_next = arg == "-r"
        given = given or chars_next
        out.append(arg)
    return out if given else ["-r" + XFAIL_REPORT, *out]


def _any_of(patterns: object) -> str | None:
    """A list of regular expressions (any one matching counts: ctest's lists, a kind's and a test's own) as one
    pattern; None when there are none."""
    items = [patterns] if isinstance(patterns, str) else list(patterns) if isinstance(patterns, list) else []
    return "|".join(f"(?:{p})" for p in items if isinstance(p, str) and p) or None


def ctest_tests(text: str) -> list[dict[str, Any]]:
    """Tests from `ctest --show-only=json-v1`: name, command, working directory and environment."""
    out = []
    for test in json.loads(text).get("tests", []):
        props = {p.get("name"): p.get("value") for p in test.get("properties", [])}
        if props.get("DISABLED") is True:  # ctest does not run it either
            continue
        env = props.get("ENVIRONMENT") or []
        out.append(
            {
                "name": test["name"],
                "command": list(test.get("command") or []),
                "cwd": props.get("WORKING_DIRECTORY"),
                "env": dict(item.split("=", 1) for item in env if "=" in item),
                "will_fail": props.get("WILL_FAIL") is True,
                "skip_code": props.get("SKIP_RETURN_CODE"),
                "skip_output": _any_of(props.get("SKIP_REGULAR_EXPRESSION")),
                "pass_output": _any_of(props.get("PASS_REGULAR_EXPRESSION")),
                "fail_output": _any_of(props.get("FAIL_REGULAR_EXPRESSION")),
                "env_modifications": list(props.get("ENVIRONMENT_MODIFICATION") or []),
            }
        )
    return out


def _ctest(entry: TestEntry, cwd: str) -> list[TestCommand]:
    build = _absolute(entry.build_dir or ".", cwd)
    listing = ["ctest", "--show-only=json-v1", *(["-R", entry.regex] if entry.regex else [])]
    printed = _run(entry, listing, build)
    try:
        tests = ctest_tests(printed)
    except (ValueError, KeyError, TypeError) as exc:  # ctest prints a bad -R's error before its JSON, and exits 0
        raise DiscoveryError(
            f"[[test]] {entry.name}: `{shlex.join(listing)}` in {build} did not print its JSON test list "
            f"({exc}): {printed.strip()[:1500] or 'no output'}"
        ) from exc
    if any(not t["command"] for t in tests):
        missing = [t["name"] for t in tests if not t["command"]]
        raise DiscoveryError(f"[[test]] {entry.name}: ctest lists no command for {', '.join(missing)}")
    if entry.per == "binary":
        binaries = list(dict.fromkeys(t["command"][0] for t in tests))
        return [
            TestCommand(case=Path(b).name, argv=[b, *entry.args], cwd=build, env=entry.env) for b in binaries
        ]
    return [
        TestCommand(
            case=t["name"],
            argv=[*t["command"], *entry.args],
            cwd=t["cwd"] or build,
            env={**t["env"], **entry.env},
            expect_any_exit=t["will_fail"],
            not_run_exits=(
                {int(t["skip_code"]): "ctest: the test's SKIP_RETURN_CODE, it skipped itself"}
                if isinstance(t["skip_code"], int)
                else {}
            ),
            not_run_output=t["skip_output"],
            pass_output=t["pass_output"],
            fail_output=t["fail_output"],
            env_modifications=t["env_modifications"],
        )
        for t in tests
    ]


def gtest_names(text: str) -> list[str]:
    """Full test names (Suite.Test) from `--gtest_list_tests` output; parameter comments are dropped."""
    names, suite = [], ""
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        else:
            names.append(suite + line.split("#")[0].strip())
    # gtest lists disabled tests but runs them only with --gtest_also_run_disabled_tests: run alone, one would run
    # nothing and exit 0.
    return [n for n in names if not any(part.startswith("DISABLED_") for part in re.split(r"[./]", n))]


def _gtest(entry: TestEntry, cwd: str) -> list[TestCommand]:
    binary = _absolute(entry.binary or "", cwd)
    chosen = [f"--gtest_filter={entry.filter}"] if entry.filter else []
    if entry.per == "binary":
        return [TestCommand(case=Path(binary).name, argv=[binary, *chosen, *entry.args], cwd=cwd, env=entry.env)]
    names = gtest_names(_run(entry, [binary, "--gtest_list_tests", *chosen], cwd, entry.env))
    return [
        TestCommand(case=name, argv=[binary, f"--gtest_filter={name}", *entry.args], cwd=cwd, env=entry.env)
        for name in names
    ]


def discover(entry: TestEntry, here: str | None = None) -> list[TestCommand]:
    """The processes `entry` runs, with absolute paths (service workers see the checkout at the same path)."""
    cwd = _absolute(entry.cwd or ".", here or os.getcwd())
    if not Path(cwd).is_dir():
        what = 'not a directory' if Path(cwd).exists() else 'missing'
        raise DiscoveryError(f"[[test]] {entry.name}: cwd {cwd} is {what}")
    if entry.kind == "pytest":
        found = _pytest(entry, cwd)
    elif entry.kind == "ctest":
        found = _ctest(entry, cwd)
    elif entry.kind == "gtest":
        found = _gtest(entry, cwd)
    else:
        return [TestCommand(case=entry.name, argv=[*entry.argv, *entry.args], cwd=cwd, env=entry.env)]
    if not found:
        raise DiscoveryError(f"[[test]] {entry.name}: {entry.kind} discovery found no tests in {cwd}")
    return found


def command_params(entry: TestEntry, test: TestCommand) -> dict[str, Any]:
    """The command probe's parameters for one test process."""
    return {
        "argv": test.argv,
        "cwd": test.cwd,
        "env": test.env,
        "timeout_s": entry.timeout_s,
        "expect_exit": None if entry.expect_exit == "any" or test.expect_any_exit else entry.expect_exit,
        "not_run_exits": {**NOT_RUN_EXITS.get(entry.kind, {}), **test.not_run_exits},
        "not_run_output": _any_of([NOT_RUN_OUTPUT.get(entry.kind), test.not_run_output]),
        "pass_output": test.pass_output,
        "fail_output": test.fail_output,
        "env_modifications": test.env_modifications,
        "case": test.case,
        **({"expect": entry.expect} if entry.control else {}),
        **({} if entry.gpu else {"gpu": False}),
    }
