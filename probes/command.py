"""command: an operator-approved executable run under the sanitizer; off unless enabled, allowlisted."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path, PurePath

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cuprobe import internal_env
from cuprobe.contract import CaseResult, Expectation, Tool
from cuprobe.probes.allocator import Allocator
from cuprobe.probes.allowed_env import allowlisted
from cuprobe.probes.base import Probe, ProbeRefused, ProbeUnavailable, Recorder
from cuprobe.probes.kinds import kind_refusal
from cuprobe.probes.pytest_run import (
    PLUGIN as PLUGIN_NAME,
)
from cuprobe.probes.pytest_run import (
    PluginReport,
    confirm_spec,
    plugin_env,
    plugin_failure,
    read_report,
    runs_pytest,
    watched,
    without_added_path,
)
from cuprobe.proctree import become_subreaper, kill_descendants

ENABLED_ENV = "CUPROBE_COMMAND_ENABLED"
# Set only by cuprobe's local runs (cuprobe exec, gate --local): the user's own command, no allowlist, no scrub.
TRUSTED_ENV = internal_env.COMMAND_TRUSTED
# Variables a service job's `env` and `env_modifications` may not set: the loader's and cuprobe's own.
REFUSED_ENV = re.compile(r"^(LD_|CUPROBE_)")
# Exact paths or globs over the resolved path (wildcards stay within one segment), os.pathsep-separated.
ALLOWLIST_ENV = "CUPROBE_COMMAND_ALLOWLIST"
OUTPUT_TAIL = 64 * 1024


# compute-sanitizer itself, as argv[0]: under cuprobe it would run a sanitizer inside the sanitizer, its report unread.
SANITIZER_NAMES = frozenset({"compute-sanitizer", "compute-sanitizer.bat", "compute-sanitizer.exe"})


def is_sanitizer(argv: list[str]) -> bool:
    """Whether `argv` runs compute-sanitizer itself."""
    return bool(argv) and PurePath(argv[0]).name in SANITIZER_NAMES


# What ctest's append/prepend ops join with, by the op's kind (`path_list_append`: the path separator).
LIST_SEPARATORS = {"path_list": os.pathsep, "cmake_list": ";", "string": ""}
# ctest's ENVIRONMENT_MODIFICATION ops: reset, set, unset, and each kind's append and prepend.
ENV_OPS = frozenset({"reset", "set", "unset"} | {f"{k}_{w}" for k in LIST_SEPARATORS for w in ("append", "prepend")})


def modified_env(env: dict[str, str], mods: list[str], original: dict[str, str]) -> dict[str, str]:
    """`env` with ctest's ENVIRONMENT_MODIFICATION entries applied in order (`reset` goes back to `original`)."""
    out = dict(env)
    for mod in mods:
        name, _, rest = mod.partition("=")
        op, _, value = rest.partition(":")
        now = out.get(name)
        if op == "reset":
            out.pop(name, None)
            if name in original:
                out[name] = original[name]
        elif op == "set":
            out[name] = value
        elif op == "unset":
            out.pop(name, None)
        else:
            kind, _, where = op.rpartition("_")
            sep = LIST_SEPARATORS[kind] if now else ""
            out[name] = (now or "") + sep + value if where == "append" else value + sep + (now or "")
    return out


class CommandParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    argv: list[str] = Field(min_length=1, description="the executable and its arguments")
    timeout_s: float = Field(
        600, gt=0, le=24 * 3600, description="wall-clock limit; every process the command started is killed"
    )
    cwd: str | None = Field(None, description="working directory (default: the probe's)")
    gpu: bool = Field(
        True,
        description="bare (tool none) only: false sends the job to a CPU worker, for a program that needs no GPU "
        "(CPU-only tests); under a sanitizer a GPU is always needed",
    )
    expect_exit: int | None = Field(
        0, ge=0, le=255, description="exit status the command must end with (0-255; a signal is never one); null: any"
    )
    not_run_exits: dict[int, str] = Field(
        default_factory=dict,
        description="exit statuses that say the test never ran, with what each means (pytest's 2-5): such a run is "
        "an error whatever expect_exit says, never clean",
    )
    not_run_output: str | None = Field(
        None, description="a regular expression that, found in the command's stdout, says no test ran (gtest's)"
    )
    pass_output: str | None = Field(
        None,
        description="a regular expression the command's output (stdout and stderr) must match, whatever its exit "
        "status (ctest's PASS_REGULAR_EXPRESSION)",
    )
    fail_output: str | None = Field(
        None, description="a regular expression that, found in the output, fails the test (FAIL_REGULAR_EXPRESSION)"
    )
    env_modifications: list[str] = Field(
        default_factory=list,
        description="ctest's ENVIRONMENT_MODIFICATION, `VAR=op:value` applied in order to the command's environment "
        f"(ops: {', '.join(sorted(ENV_OPS))})",
    )
    env: dict[str, str] = Field(default_factory=dict, description="variables added to the command's environment")
    case: str = Field(
        "command", min_length=1, max_length=1000, description="the case findings are attributed to (a test's id)"
    )
    expect: str | None = Field(
        None, description="a known defect: the finding kind the tool must report (a positive control)"
    )
    allocator: Allocator | None = Field(
        None,
        description="torch's allocator in a pytest command: cuprobe's pytest plugin (_cuprobe_pytest) sets it up "
        "in the test process",
    )
    tests: list[str] = Field(
        default_factory=list,
        max_length=100_000,
        description="pytest node ids the command runs in one process: one case each, judged from pytest's reports",
    )

    @field_validator("expect")
    @classmethod
    def _expect_is_a_kind(cls, value: str | None) -> str | None:
        if value is not None and (why := kind_refusal(value)):
            raise ValueError(f"expect: {why}")
        return value

    @field_validator("argv")
    @classmethod
    def _not_the_sanitizer(cls, argv: list[str]) -> list[str]:
        if is_sanitizer(argv):
            raise ValueError(
                f"argv[0] is {argv[0]}: cuprobe runs the program under the sanitizer itself, so give the program as "
                "the command and the tool and sanitizer options as the run's (`cuprobe exec -- compute-sanitizer "
                "--tool T ... ./app` reads such a line into them)"
            )
        return argv

    @field_validator("env_modifications")
    @classmethod
    def _known_ops(cls, mods: list[str]) -> list[str]:
        for mod in mods:
            name, eq, rest = mod.partition("=")
            op = rest.partition(":")[0]
            if not name or not eq or op not in ENV_OPS:
                raise ValueError(f"{mod!r}: expected VAR=op:value with op one of {', '.join(sorted(ENV_OPS))}")
        return mods

    @field_validator("not_run_output", "pass_output", "fail_output")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from exc
        return pattern


def refused_names(params: CommandParams) -> list[str]:
    """The loader's and cuprobe's variables that a job's `env` or `env_modifications` would set, change or unset:
    LD_PRELOAD=set:evil.so runs code of the job's choice inside any allowlisted program."""
    names = set(params.env) | {mod.partition("=")[0] for mod in params.env_modifications}
    return sorted(name for name in names if REFUSED_ENV.match(name))


def child_env(env: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """The command's environment: the probe's own allowlist (what CUDA, torch and Triton need) plus what
    compute-sanitizer injected to follow it; no credentials, no cuprobe settings. Returns it and what was left out."""
    kept, dropped = allowlisted(env, sanitizer_injected=True)
    cuprobe = sorted(k for k in kept if k.startswith("CUPROBE_"))
    return {k: v for k, v in kept.items() if k not in cuprobe}, sorted(dropped + cuprobe)


# Programs that run whatever their arguments say (shells, interpreters, launchers, the dynamic loader): allowlisting
# one allows everything, so they run only when the allowlist names their exact path, never through a glob. Many
# other programs can start a shell too (an editor, a pager); the sandbox around a service job's run is what keeps
# such a program away from cuprobe, not this list.
INTERPRETER = re.compile(
    r"^(env|sh|bash|dash|zsh|ksh|mksh|csh|tcsh|fish|busybox|python[0-9.]*|pypy[0-9.]*|perl[0-9.]*|ruby[0-9.]*|"
    r"node|nodejs|deno|bun|php[0-9.]*|lua[0-9.]*|luajit|tclsh[0-9.]*|wish[0-9.]*|expect|R|Rscript|julia|java|"
    r"awk|gawk|mawk|nawk|xargs|nohup|timeout|nice|ionice|setsid|stdbuf|chroot|sudo|su|doas|strace|ltrace|"
    r"gdb|valgrind|find|make|ssh|compute-sanitizer|chrt|choom|taskset|flock|unshare|nsenter|setpriv|prlimit|"
    r"runuser|numactl|capsh|bwrap|firejail|systemd-run|script|watch|time|parallel|cmake|ctest|ninja|"
    r"ld-linux[-_.a-z0-9]*|ld[0-9.]*\.so[0-9.]*|ld-musl[-_.a-z0-9]*)$"
)
GLOB_CHARS = frozenset("*?[")


def glob_regex(glob: str) -> re.Pattern[str]:
    """`glob` as a regex whose `*`, `?` and `[...]` match within one path segment (never across `/`)."""
    out, i = [], 0
    while i < len(glob):
        char = glob[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            out.append(f"[{'^' if negate else ''}{body.replace(chr(92), chr(92) * 2).replace('/', '')}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out) + r"\Z")


def allowed(executable: str, allowlist: str) -> bool:
    """Whether the resolved executable path matches an allowlist entry: exact for an interpreter-like program,
    else a glob whose wildcards stay within one path segment."""
    entries = [entry for entry in allowlist.split(os.pathsep) if entry]
    if executable in entries:
        return True
    if INTERPRETER.match(Path(executable).name):
        return False
    return any(glob_regex(entry).match(executable) for entry in entries if GLOB_CHARS & set(entry))


def locate(program: str, cwd: str | None = None) -> str:
    """The executable's absolute path as found (a relative path is taken from `cwd`), symlinks kept: a virtual
    environment's `bin/python` is a symlink to the base interpreter, and only run by its own path does it see the
    environment's packages."""
    if os.sep in program and not os.path.isabs(program) and cwd:
        program = os.path.join(cwd, program)
    found = shutil.which(program)
    if found is None:
        raise ProbeRefused(f"argv[0]: {program!r} is not an executable file found on PATH")
    return os.path.abspath(found)


class Command(Probe[CommandParams]):
    name = "command"
    summary = "Runs an allowlisted executable under the sanitizer (off unless CUPROBE_COMMAND_ENABLED=1)"
    Params = CommandParams
    tools = (Tool.MEMCHECK, Tool.INITCHECK, Tool.RACECHECK, Tool.SYNCCHECK, Tool.NONE)
    runs_users_program = True
    # A pytest command's torch memory is logged and poisoned inside the test process (probes/test_watch.py); the
    # bare re-runs start once the findings are known, watching only the flagged allocations.
    poisonable = True
    reruns_early = False

    def gpu_needed(self, params: CommandParams) -> bool:
        """Asked for bare runs only (a sanitizer always needs a GPU): whether the program needs one."""
        return params.gpu

    def poison_refusal(self, params: CommandParams) -> str | None:
        if runs_pytest(params.argv):
            return None
        return (
            "the command probe poisons memory only in a pytest process (cuprobe's pytest plugin replaces torch's "
            "allocator there), so other commands' reads cannot be re-run"
        )

    def expectation(self, params: CommandParams, tool: Tool) -> Expectation:
        if params.expect and tool is not Tool.NONE:
            return Expectation.positive_control(tool, params.expect)
        return Expectation()

    def run(self, params: CommandParams, tool: Tool, recorder: Recorder) -> None:
        trusted = os.environ.get(TRUSTED_ENV) == "1"
        if os.environ.get(ENABLED_ENV) != "1" and not trusted:
            raise ProbeUnavailable(
                f"the command probe is off on this worker: the operator enables it with "
                f"{ENABLED_ENV}=1 and an allowlist of path globs in {ALLOWLIST_ENV}"
            )
        path = locate(params.argv[0], params.cwd)
        executable = str(Path(path).resolve())  # what the allowlist judges; `path` is what runs
        if not trusted and not allowed(executable, os.environ.get(ALLOWLIST_ENV, "")):
            exact = " (an interpreter-like program: allowed only by its exact path)" if INTERPRETER.match(
                Path(executable).name
            ) else ""
            raise ProbeRefused(f"argv[0]: {executable} matches no glob in {ALLOWLIST_ENV}{exact}")
        if not trusted and (refused := refused_names(params)):
            raise ProbeRefused(
                f"env: a service job may not set {', '.join(refused)} (the loader's and cuprobe's own variables), "
                "neither in `env` nor in `env_modifications`"
            )
        base = without_added_path({k: v for k, v in os.environ.items() if k not in (TRUSTED_ENV, ENABLED_ENV)})
        env, dropped = (base, []) if trusted else child_env(base)
        env.update(params.env)
        env = modified_env(env, params.env_modifications, base)
        pytest = runs_pytest(params.argv)
        if params.tests and not pytest:
            raise ProbeRefused("tests: node ids are read only for a pytest command")
        workdir = Path(tempfile.mkdtemp(prefix="cuprobe-pytest-")) if pytest else None
        confirm = confirm_spec(tool, recorder, workdir) if workdir is not None else None
        if workdir is not None:  # the plugin merged into the test's own environment, after what the test set
            env = plugin_env(env, params.allocator, workdir / "report.jsonl", confirm)
        cases = [
            recorder.case(test, Expectation(), argv=params.argv, executable=executable) for test in params.tests
        ] or [recorder.case(params.case, self.expectation(params, tool), argv=params.argv, executable=executable)]
        case = cases[0]
        case.observations["env_dropped"] = dropped
        try:
            self._run(params, path, env, case, cases, workdir)
            if confirm is not None and workdir is not None:
                watched(recorder, cases, Path(confirm["dir"]))
        finally:
            if workdir is not None:
                shutil.rmtree(workdir, ignore_errors=True)

    def _run(
        self,
        params: CommandParams,
        path: str,
        env: dict[str, str],
        case: CaseResult,
        cases: list[CaseResult],
        workdir: Path | None,
    ) -> None:
        # Orphans of the command are re-parented to this probe, so every process it started can be found.
        become_subreaper()
        # Same process group as the probe (no new session): the supervisor's group kill on cancel reaches it.
        proc = subprocess.Popen(
            [path, *params.argv[1:]],
            cwd=params.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            out, err = proc.communicate(timeout=params.timeout_s)
        except subprocess.TimeoutExpired:
            kill_descendants(os.getpid())
            out, err = proc.communicate()
            case.observations.update(timed_out=True, stdout_tail=_tail(out), stderr_tail=_tail(err))
            raise RuntimeError(
                f"command exceeded its wall-clock limit of {params.timeout_s:g} s; "
                "it and every process it started were killed"
            ) from None
        left = kill_descendants(os.getpid())  # a background child outlives the command only until the probe ends
        case.observations.update(
            exit_code=proc.returncode,
            timed_out=False,
            stdout_tail=_tail(out),
            stderr_tail=_tail(err),
            leftover_processes_killed=left,
        )
        report = read_report(workdir / "report.jsonl") if workdir is not None else None
        if report is not None and not report.loaded and _plugin_to_blame(proc.returncode, params, err, out):
            raise RuntimeError(
                f"cuprobe's pytest plugin ({PLUGIN_NAME}) did not load in the test's interpreter, so the run is not "
                f"judged (cuprobe's failure, not the test's): {plugin_failure(_tail(err), _tail(out))}"
            )
        if report is not None and report.allocator:
            case.observations["allocator"] = report.allocator
        if (meaning := params.not_run_exits.get(proc.returncode)) is not None:
            raise RuntimeError(f"the command exited {proc.returncode} ({meaning}): the test did not run")
        said = _plain(_tail(out) + "\n" + _tail(err))  # ctest's skip pattern reads both, as the summaries are on stdout
        if params.not_run_output and (seen := re.search(params.not_run_output, said, re.M)):
            raise RuntimeError(f"the command printed {seen.group(0).strip()!r}: no test ran")
        output = _plain(out.decode("utf-8", errors="replace") + "\n" + err.decode("utf-8", errors="replace"))
        if params.fail_output and (bad := re.search(params.fail_output, output, re.M)):
            case.violations.append(f"the output matched the failure pattern: {bad.group(0).strip()[:200]!r}")
        if params.pass_output is not None:
            if not re.search(params.pass_output, output, re.M):
                case.violations.append(f"the output never matched the pass pattern {params.pass_output!r}")
            return  # the pattern decides, not the exit status (ctest's PASS_REGULAR_EXPRESSION)
        if params.tests and report is not None:
            _judge_tests(report, cases)
            return
        if params.expect_exit is not None and proc.returncode != params.expect_exit:
            lines = [line.strip() for line in _tail(err).splitlines() if line.strip()]
            last = f" (its last line on stderr: {lines[-1][:200]})" if lines else ""
            case.violations.append(f"command exited {proc.returncode}, expected {params.expect_exit}{last}")


def _plugin_to_blame(returncode: int, params: CommandParams, err: bytes, out: bytes) -> bool:
    """Whether a pytest process whose plugin never reported loading failed because of the plugin: pytest said it could
    not import it, or pytest ended normally without calling it. A process killed by a signal, or one that stopped at
    its own usage error before plugins are configured, is judged as any other."""
    if plugin_failure(_tail(err), _tail(out), strict=True):
        return True
    return returncode >= 0 and returncode not in params.not_run_exits


def _judge_tests(report: PluginReport, cases: list[CaseResult]) -> None:
    """Each test of a process that ran several, as pytest reported it: a failed test is a violation of its own case;
    one that did not run, or that the process never reported, is said so in its observations."""
    for case in cases:
        verdict = report.verdict(case.id)
        case.observations.update(pytest=verdict.verdict, pytest_seconds=verdict.seconds)
        if verdict.message:
            case.observations["pytest_message"] = verdict.message
        if verdict.verdict == "failed":
            case.violations.append(f"pytest reported the test failed ({verdict.message})")


ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")  # colour and cursor codes (pytest --color=yes, GTEST_COLOR)


def _plain(text: str) -> str:
    """`text` without terminal escape codes: what a reader of the output sees, what the not-run patterns match."""
    return ANSI_ESCAPE.sub("", text)


def _tail(data: bytes) -> str:
    return data[-OUTPUT_TAIL:].decode("utf-8", errors="replace")
