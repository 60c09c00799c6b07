"""CLI commands for the service: submit, status, results, jobs, cancel, serve, worker, beat, up."""

from __future__ import annotations

import json
import os
import sys
import time
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, Union, get_args, get_origin

import typer

from cuprobe.service.cli.consoles import escape, stderr, stdout
from cuprobe.service.cli.options import SanitizerOpt, parse_options
from cuprobe.tool import Tool

if TYPE_CHECKING:  # each command imports what it uses when it runs: `cuprobe --help` stays fast
    from cuprobe.service.client import ApiError, Client

# How long `cancel` waits for a running job to stop before saying it is still running.
CANCEL_WAIT_S = 5.0
# Job ids in lists: every command accepts any unique prefix.
SHORT_ID = 8
# The most jobs one GET /jobs lists (the API's own cap).
MAX_LISTED = 1000

UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="CUPROBE_API_URL",
        help="API URL (default: the `cuprobe up` serving this CUPROBE_DATA_DIR, on whatever --port it was given, "
        "else http://127.0.0.1:8000)",
        show_default=False,
    ),
]
TokenOpt = Annotated[
    str | None, typer.Option("--token", envvar="CUPROBE_API_TOKEN", help="bearer token", show_default=False)
]
JsonOpt = Annotated[bool, typer.Option("--json", help="print the JSON the API returned")]
ParamOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--param",
        "-p",
        help="a probe parameter as NAME=VALUE, repeatable; VALUE is read as JSON where it parses (-p n=[1,2,4], "
        "-p seconds=0.5), else as text, and a list also as a,b (-p variants=guarded,torch); `cuprobe probes PROBE` "
        "lists the parameters",
    ),
]


def _client(url: str | None, token: str | None) -> Client:
    from cuprobe.service.cli.api_url import api_url
    from cuprobe.service.cli.local_token import local_token
    from cuprobe.service.client import Client
    from cuprobe.service.config import get_settings

    settings = get_settings()
    # A local `cuprobe up --command` keeps its token in the data directory, for its own user's CLI.
    return Client(api_url(url, settings), token or local_token(settings.data_dir))


def _fail(exc: ApiError) -> typer.Exit:
    """Say what the API said (as text: it may hold brackets rich would read as markup) and exit: 2 for a request
    the service refused (4xx), 3 where it could not be reached or failed itself (5xx: try again later)."""
    from cuprobe.service.models import ExitCode

    stderr().print(f"[red]error:[/red] {escape(exc.said())}", soft_wrap=True)
    return typer.Exit(ExitCode.NOT_RUN if exc.status == 0 or exc.status >= 500 else ExitCode.USAGE)


def _param_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _takes_list(annotation: Any) -> bool:
    """Whether a parameter of this type takes a list and no text (`list[str]`, `list[int] | None`)."""
    kinds = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    return str not in kinds and any(get_origin(kind) in (list, tuple, set) for kind in kinds)


def _list_fields(probe: str | None) -> set[str]:
    """The names of `probe`'s list parameters; none for a probe not installed here (the service judges those)."""
    if probe is None:
        return set()
    from cuprobe.probes import registry

    try:
        fields = registry.get(probe).Params.model_fields
    except Exception:  # unknown here, or a plug-in that cannot load: admission says so
        return set()
    return {name for name, field in fields.items() if _takes_list(field.annotation)}


def _as_list(text: str) -> list[str]:
    """`a,b`, `a` or `[a, b]` (JSON's brackets without its quotes) as ["a", "b"]."""
    inner = text.strip().removeprefix("[").removesuffix("]")
    return [item.strip() for item in inner.split(",") if item.strip()]


def parse_params(pairs: list[str], params_json: str | None, probe: str | None = None) -> dict[str, Any]:
    """`--params '{...}'` then each `--param key=value` (value read as JSON when it parses; for a list parameter of
    `probe`, text that is not JSON is read as a comma-separated list)."""
    try:
        params: Any = json.loads(params_json) if params_json else {}
    except ValueError as exc:
        raise typer.BadParameter(f"not valid JSON: {exc}", param_hint="--params") from exc
    if not isinstance(params, dict):
        raise typer.BadParameter(f"a JSON object is needed, not {type(params).__name__}", param_hint="--params")
    lists = _list_fields(probe) if pairs else set()
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"expected key=value, got {pair!r}", param_hint="--param")
        read = _param_value(value)
        params[key] = _as_list(value) if key in lists and isinstance(read, str) else read
    return params


def _describe(job: dict[str, Any]) -> str:
    """`outcome: message` (or `state: message`), escaped for rich: messages quote the user's own input."""
    state = job["state"]
    if state == "done":
        return escape(f"{job['outcome']}: {job['message']}")
    return escape(f"{state}: {job['message']}")


def _named(job: dict[str, Any]) -> str:
    """`ID PROBE [TOOL]`, escaped for rich (whose markup `[TOOL]` would otherwise be)."""
    return escape(f"{job['id']} {job['probe']} [{job['tool']}]")


def _exit_code(job: dict[str, Any]) -> int:
    from cuprobe.service.models import ExitCode

    code = job.get("exit_code")
    return ExitCode.PENDING if code is None else int(code)


def _wait(client: Client, job: dict[str, Any], poll_s: float) -> dict[str, Any]:
    from cuprobe.service.queue.waiting import ended, poll

    start = time.monotonic()
    with stderr().status("") as status:

        def show(pending: dict[str, dict[str, Any]]) -> None:
            for now in pending.values():
                attempt = f" (attempt {now['attempts']})" if now["state"] == "running" else ""
                status.update(
                    f"{now['probe']} {now['id'][:SHORT_ID]}: {now['state']}{attempt}, "
                    f"{time.monotonic() - start:.0f} s"
                )

        def read(job_id: str) -> dict[str, Any]:  # held by the server until the job ends, at most poll_s
            return client.job(job_id, wait_s=poll_s)

        for _, done in poll([job["id"]], read, lambda j: ended(j["state"]), poll_s=poll_s, progress=show):
            return done
    return job


def submit(
    probe: Annotated[str, typer.Argument(help="probe name (see GET /probes)")],
    tool: Annotated[Tool | None, typer.Option(help="sanitizer tool or none; the probe's default when omitted")] = None,
    param: ParamOpt = None,
    params: Annotated[str | None, typer.Option("--params", help="parameters as a JSON object")] = None,
    timeout: Annotated[float | None, typer.Option(help="wall-clock limit of the run, seconds")] = None,
    arch: Annotated[str | None, typer.Option(help="GPU architecture for GPU probes, e.g. sm90")] = None,
    lane: Annotated[str, typer.Option(help="gate or sweep")] = "gate",
    deadline: Annotated[
        float | None, typer.Option(help="seconds to wait for a worker before `unavailable`")
    ] = None,
    wait_for_worker: Annotated[
        bool,
        typer.Option("--wait-for-worker", help="if no live worker serves the queue, wait for one (up to --deadline)"),
    ] = False,
    wait: Annotated[bool, typer.Option("--wait", help="wait for the outcome, showing progress")] = False,
    poll: Annotated[
        float, typer.Option(help="with --wait: seconds between progress updates (the end is seen at once)")
    ] = 0.5,
    sanitizer_option: SanitizerOpt = None,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Submit a probe job; with --wait, exit 0 clean, 1 findings, 3 could not run."""
    from cuprobe.service.client import ApiError
    from cuprobe.service.models import ExitCode

    spec: dict[str, Any] = {"probe": probe, "params": parse_params(param or [], params, probe), "lane": lane}
    if options := parse_options(sanitizer_option or []).model_dump(mode="json", exclude_defaults=True):
        spec["options"] = options
    if wait_for_worker:
        spec["wait_for_worker"] = True
    for key, value in (
        ("tool", tool.value if tool else None),
        ("timeout_s", timeout),
        ("arch", arch),
        ("deadline_s", deadline),
    ):
        if value is not None:
            spec[key] = value
    client = _client(url, token)
    try:
        job = client.submit(spec)
        if wait:
            job = _wait(client, job, poll)
    except ApiError as exc:
        raise _fail(exc) from exc
    if as_json:
        stdout().print_json(data=job)
    elif wait:
        said = f"{escape(job['id'] + ' ' + job['probe'])}: {_describe(job)} ({job.get('findings') or 0} findings)"
        stdout().print(said)
    else:
        stdout().print(job["id"])
    raise typer.Exit(_exit_code(job) if wait else ExitCode.CLEAN)


def status(job_id: str, as_json: JsonOpt = False, url: UrlOpt = None, token: TokenOpt = None) -> None:
    """A job's state and outcome; exit code as for `results` (4 while it has not finished)."""
    from cuprobe.service.client import ApiError

    try:
        job = _client(url, token).job(job_id)
    except ApiError as exc:
        raise _fail(exc) from exc
    if as_json:
        stdout().print_json(data=job)
    else:
        handed = f" ({job['handed_back']} handed back)" if job.get("handed_back") else ""
        stdout().print(f"{_named(job)} attempts={job['attempts']}{handed} {_describe(job)}", soft_wrap=True)
    raise typer.Exit(_exit_code(job))


def results(job_id: str, as_json: JsonOpt = False, url: UrlOpt = None, token: TokenOpt = None) -> None:
    """A job's outcome and findings; exit 0 clean, 1 findings, 3 could not run, 4 not finished."""
    from cuprobe.service.cli.render import findings_table
    from cuprobe.service.client import ApiError
    from cuprobe.service.models import Finding

    client = _client(url, token)
    try:
        job = client.job(job_id)
        findings = client.findings(job_id)["findings"]
    except ApiError as exc:
        raise _fail(exc) from exc
    if as_json:
        stdout().print_json(data={**job, "findings": findings})
        raise typer.Exit(_exit_code(job))
    stdout().print(f"{_named(job)}: {_describe(job)}", soft_wrap=True)
    if findings:
        stdout().print(findings_table([Finding.model_validate(f) for f in findings]))
    raise typer.Exit(_exit_code(job))


def jobs(
    probe: Annotated[str | None, typer.Option(help="only this probe")] = None,
    tool: Annotated[str | None, typer.Option(help="only this tool")] = None,
    outcome: Annotated[str | None, typer.Option(help="only this outcome (clean, findings, unavailable, ...)")] = None,
    state: Annotated[str | None, typer.Option(help="only this state (queued, running, done, cancelled)")] = None,
    label: Annotated[
        str | None, typer.Option(help="only jobs of this label: a gate run's (gate:SUITE:RUN), a sweep's (sweep:ID)")
    ] = None,
    limit: Annotated[
        int, typer.Option(min=1, max=MAX_LISTED, help=f"at most this many, newest first (up to {MAX_LISTED})")
    ] = 20,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """List jobs, newest first; any unique prefix of an id shown works with status, results and cancel."""
    from rich.box import SIMPLE_HEAD
    from rich.table import Table

    from cuprobe.service.client import ApiError

    try:
        found = _client(url, token).jobs(
            probe=probe or "",
            tool=tool or "",
            outcome=outcome or "",
            state=state or "",
            label=label or "",
            limit=str(min(limit + 1, MAX_LISTED)),  # one more than shown: whether more match
        )["jobs"]
    except ApiError as exc:
        raise _fail(exc) from exc
    more = len(found) > limit
    found = found[:limit]
    if more:  # on stderr: the list (and its JSON) stays the list
        wider = f"`--limit {min(limit * 5, MAX_LISTED)}` shows more" if limit < MAX_LISTED else "none lists more"
        stderr().print(
            f"the {limit} newest shown; more jobs match: {wider}, or narrow them with --probe, --tool, --outcome, "
            "--state or --label",
            soft_wrap=True,
        )
    if as_json:
        stdout().print_json(data=found)
        return
    if not found:
        stdout().print("no jobs match")
        return
    # Six columns that fit 80 without breaking a word: a finished job's outcome, else its state (queued, running,
    # cancelled), and one space between the columns.
    table = Table(box=SIMPLE_HEAD, show_edge=False, padding=0)
    for column in ("id", "probe", "tool", "outcome", "findings", "created"):
        table.add_column(column, overflow="fold")
    for job in found:
        table.add_row(
            job["id"][:SHORT_ID],
            job["probe"],
            job["tool"],
            job["outcome"] or job["state"],
            str(job.get("findings") or 0),
            job["created_at"][:16].replace("T", " "),
        )
    stdout().print(table)


def cancel(job_id: str, url: UrlOpt = None, token: TokenOpt = None) -> None:
    """Cancel a queued job, or stop a running one (waits up to 5 s for the stop, then says where it stands)."""
    from cuprobe.service.client import ApiError
    from cuprobe.service.queue.waiting import poll

    client = _client(url, token)
    try:
        job = client.cancel(job_id)
        deadline = time.monotonic() + CANCEL_WAIT_S
        stopped = poll(
            [job["id"]],
            client.job,
            lambda j: j["state"] != "running" or time.monotonic() >= deadline,
            poll_s=0.1,
        )
        job = next(iter(stopped))[1] if job["state"] == "running" else job
    except ApiError as exc:
        raise _fail(exc) from exc
    if job["state"] == "running":
        stdout().print(f"{job['id']}: stop requested; still running after {CANCEL_WAIT_S:.0f} s")
    else:
        stdout().print(f"{job['id']}: {_describe(job)}", soft_wrap=True)


def serve(
    host: Annotated[
        str | None, typer.Option(help="bind address (default CUPROBE_API_HOST, 127.0.0.1)")
    ] = None,
    port: Annotated[int | None, typer.Option(help="port (default CUPROBE_API_PORT, 8000)")] = None,
) -> None:
    """Serve the HTTP API (store and broker from CUPROBE_DATABASE_URL / CUPROBE_BROKER_URL)."""
    import uvicorn

    from cuprobe.service.api import create_app
    from cuprobe.service.api.server import server_config
    from cuprobe.service.config import get_settings
    from cuprobe.service.probing.secrets import not_dumpable

    not_dumpable()
    settings = get_settings()
    uvicorn.Server(server_config(create_app(settings), host or settings.api_host, port or settings.api_port)).run()


def worker(
    cpu_concurrency: Annotated[int, typer.Option(help="processes of the CPU worker (0: one per core)")] = 0,
    cpu: Annotated[bool, typer.Option("--cpu/--no-cpu", help="also start the CPU worker")] = True,
    gpus: Annotated[bool, typer.Option("--gpus/--no-gpus", help="start one worker per visible GPU")] = True,
    loglevel: Annotated[str, typer.Option(help="Celery log level")] = "INFO",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="print the worker command lines and exit")
    ] = False,
) -> None:
    """Start one Celery worker per visible GPU (pinned with CUDA_VISIBLE_DEVICES) and a CPU worker."""
    from cuprobe.service.config import get_settings
    from cuprobe.service.models import ExitCode
    from cuprobe.service.probing.gpus import visible_gpus
    from cuprobe.service.probing.secrets import not_dumpable
    from cuprobe.service.worker.commands import run_workers, worker_commands
    from cuprobe.service.worker.gpu_slots import located_version, slots_for
    from cuprobe.service.worker.warm import warm_line

    not_dumpable()
    settings = get_settings()
    devices = visible_gpus() if gpus else []
    version = located_version(settings.sanitizer_path) if devices else None
    commands = worker_commands(
        devices,
        cpu_concurrency=cpu_concurrency or settings.cpu_concurrency,
        loglevel=loglevel,
        cpu=cpu,
        gpu_slots=settings.gpu_slots,
        sanitizer=version,
        confirm=settings.confirm,
    )
    for device in devices:
        k, why = slots_for(device, len(devices), settings.gpu_slots, version, settings.confirm)
        stderr().print(f"gpu{device.index} ({device.name}): {k} sanitizer slot(s) ({why}); {warm_line(settings, k)}")
    if not commands:
        stderr().print("[red]nothing to start:[/red] no GPU visible and --no-cpu given")
        raise typer.Exit(ExitCode.NOT_RUN)
    for command in commands:
        env = " ".join(f"{k}={v!r}" for k, v in command.env.items())
        stderr().print(f"{command.name}: {env} {' '.join(command.argv)}")
    if dry_run:
        raise typer.Exit(ExitCode.CLEAN)
    raise typer.Exit(run_workers(commands))


def beat(loglevel: Annotated[str, typer.Option(help="Celery log level")] = "INFO") -> None:
    """Run Celery beat: periodic reconcile (deadlines, jobs Redis lost) and artifact pruning."""
    from cuprobe.service.config import get_settings

    settings = get_settings()
    schedule = settings.data_dir / "celerybeat-schedule"
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "cuprobe.tasks.app",
        "beat",
        "--loglevel",
        loglevel,
        "-s",
        str(schedule),
    ]
    os.execv(argv[0], argv)


def up(
    host: Annotated[str, typer.Option(help="bind address")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port")] = 8000,
    cpu_concurrency: Annotated[int, typer.Option(help="processes of the CPU worker (0: one per core)")] = 0,
    command: Annotated[
        bool,
        typer.Option(
            "--command",
            help="allow the command probe (your own tests through `cuprobe gate`): it runs programs as you, so only "
            "holders of a token may submit; without CUPROBE_API_TOKEN one is made in CUPROBE_DATA_DIR/api-token, "
            "readable by you alone, which the CLI reads",
        ),
    ] = False,
) -> None:
    """Everything on this machine, nothing to set up: SQLite store, embedded Valkey broker, workers, API."""
    from cuprobe.service.cli.embedded import up as run_up
    from cuprobe.service.config import get_settings

    raise typer.Exit(
        run_up(get_settings(), host=host, port=port, cpu_concurrency=cpu_concurrency, command=command)
    )


def register(app: typer.Typer) -> None:
    """Add the service commands to the `cuprobe` Typer app."""
    for command in (submit, status, results, jobs, cancel, serve, worker, beat, up):
        app.command()(command)
