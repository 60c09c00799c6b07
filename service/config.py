"""Settings, from CUPROBE_* environment variables (pydantic-settings), read through one cached accessor."""

from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from cuprobe.service.models import Backtrace

ENV_PREFIX = "CUPROBE_"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    # Where compute-sanitizer is: this path first, then the PyPI wheel's, then PATH, then CUDA_HOME.
    sanitizer_path: Path | None = None
    # Sanitizer exit code that means "errors detected" (distinct from any code a probe exits with).
    error_exitcode: int = 86
    # compute-sanitizer --show-backtrace (yes|host|device|no); None keeps its default (yes). Host backtraces
    # are most of initcheck's cost per record; initcheck signatures need only the device location.
    show_backtrace: Backtrace | None = None
    # Runs that ask for no host backtrace go without compute-sanitizer's demangler (`--demangle no`): it renames
    # only the console text, not the XML findings come from, and cost a quarter to a third of a record-heavy
    # initcheck run's time on the H200 (service/probing/demangle.py). Their stdout.txt then names C++ functions mangled.
    skip_demangling: bool = True
    timeout_s: float = Field(600.0, gt=0)
    # Progress watchdog: a probe that beats per case (Probe.beats) and then shows no progress (no new case, no XML,
    # no output) for this long is stopped and run once more; 0 turns it off (docs/outcomes.md, "Stalled runs").
    stall_s: float = 120.0
    # Warm starts (docs/sweep.md, "Warm starts"): a sweep with more processes than slots starts the next processes'
    # sanitizer and CUDA context while earlier ones run, and hands each its parameters when its turn comes.
    warm_starts: bool = True
    # On a GPU worker, a spare readied for a sweep's next job (service/worker/warm.py) that no job has taken this
    # long after the pool process's last job ends, so an idle worker does not hold a CUDA context for long.
    worker_spare_idle_s: float = Field(default=30.0, gt=0)
    # Confirm initcheck findings: re-run their cases bare with poisoned memory (docs/confirmation.md).
    confirm: bool = True
    # Start the confirmation's bare re-runs beside the sanitizer run instead of after it (docs/confirmation.md,
    # "When the re-runs start"): they do not depend on what the sanitizer finds; a run without findings ends them.
    confirm_early: bool = True
    # How much lower the re-runs' CPU priority is than the sanitizer runs' (nice, 0-19): started beside them, with
    # four re-runs per sanitizer process, they would otherwise take the host's cores from the runs they confirm.
    # No timing is read from a re-run. 0 runs them at the worker's own priority.
    confirm_nice: int = Field(default=10, ge=0, le=19)
    # How the probe processes whose timing nobody reads (sanitizer runs, the confirmation's re-runs) wait for the GPU:
    # the primary context's scheduling flag (probes.gpu.SCHEDULES). `auto` leaves the driver's choice, which spins a
    # core while it waits wherever a process has fewer contexts than the host has cores; `blocking` sleeps until the
    # GPU is done. On the H200 at K = 8, blocking cut a sweep's CPU seconds by about a third and left its wall time
    # where it was; two of the 23 sweeps run with `blocking` or `yield` had a process stall until the watchdog
    # stopped it, none of the 37 with `auto` (docs/sweep.md, "Session 15"). So `auto` stays the default. A bare run
    # of a probe (a timing probe's) always keeps the driver's choice; a user's own program is never touched.
    cuda_schedule: Literal["auto", "spin", "yield", "blocking"] = "auto"
    # A local sweep's batches of one grid share one set of the confirmation's re-runs over all their cases
    # (service/probing/confirm_shared.py, docs/confirmation.md), and a sweep's jobs through the service one set per
    # host (confirm_host.py): a re-run's cost is mostly its start. Off: each batch confirms with its own four.
    confirm_shared: bool = True
    # How many processes the confirmation's four bare re-runs (docs/confirmation.md, "Re-runs sharing a process")
    # take, dealt in turn: at 2 (the default) the two with the 0xFF poison in different processes, so determinism is
    # still checked across two, each followed by another re-run in its process; at 1 all four one after another in
    # one process; at 4 one each. A re-run's cost is mostly its start (the interpreter, pycuda, a CUDA context), and
    # contexts created side by side on one GPU wait on each other: on an H100's cold 384-case sweep at K = 8 every
    # sanitizer process's time before its first case fell by about 0.3 s at 2 against 4 (docs/sweep.md,
    # "Session 32"). Re-runs taken from a caller's ready pool (service/probing/warm_reruns.py) stay one a process.
    confirm_processes: int = Field(default=2, ge=1, le=4)
    # A probe that runs its cases in its own process (Probe.warms) ends it with os._exit once its result is written
    # and its output flushed, skipping Python's finalizers and the CUDA contexts' teardown under the sanitizer, where
    # the run asks for nothing the sanitizer reports at teardown (memcheck's leak check, initcheck's unused memory,
    # OptiX leaks, modules never unloaded). At K = 8 on H100s a sanitizer process's exit took 0.49-0.67 s (a
    # sweep's median) instead of 0.84-1.21 s, the same records and findings (docs/sweep.md, "Session 28"). Off: every
    # process exits normally.
    quick_exit: bool = True
    # A probe that runs its cases in its own process (Probe.warms) and whose parameters use torch imports torch on a
    # second thread from its start (probes/prefetch.py), beside its kernel cases, instead of when its first torch case
    # comes; under a sanitizer only (a bare run may time its cases). The 384-case grid's cold path at K = 8 (nothing
    # made before the clock) rose from medians of 135,766 and 127,102 cases per GPU-hour on two H100s and 140,642 on
    # an H200 to 144,965, 142,509 and 148,539-150,203 (docs/sweep.md, "Session 29"). Off: torch is imported on the
    # probe's own thread, when first used.
    torch_prefetch: bool = True
    # Probe processes keep Python bytecode in cuprobe's cache (CUPROBE_CACHE_DIR, default ~/.cache/cuprobe, under
    # pycache/), even where PYTHONDONTWRITEBYTECODE is set: a process would otherwise compile torch from source
    # (service/probing/secrets.py, pycache_dir). A PYTHONPYCACHEPREFIX the probe's environment has is kept.
    bytecode_cache: bool = True
    # Caps on what one run keeps: records stored, XML bytes read, stdout/stderr bytes captured.
    max_records: int = Field(10_000, gt=0)
    max_xml_bytes: int = Field(512 * 1024 * 1024, gt=0)
    max_output_bytes: int = Field(4 * 1024 * 1024, gt=0)
    # Where each run's artifacts (run.xml, stdout, stderr, result.json) are written.
    data_dir: Path = Path("cuprobe-data")
    # Suppression files a service job may name (by file name only); local runs take paths in the repository.
    suppressions_dir: Path | None = None
    # Extra source roots that finding paths are made relative to (the project root and cwd always are).
    source_roots: list[str] = []
    # Variables passed to probes beyond the built-in allowlist (probes.allowed_env); names that look like
    # credentials (TOKEN, KEY, PASSWORD, ...) are never passed.
    probe_env_pass: list[str] = []
    # Python that runs probes (the worker's own by default).
    python: str | None = None
    # Store and queue (used by the service; the embedded default needs neither set).
    database_url: str | None = None
    broker_url: str | None = None
    # Celery result backend; the broker's Redis when unset (results that matter live in the store).
    result_backend_url: str | None = None

    # --- service: queue reliability (tasks/) ---
    # A Redis message not acked within this is handed to another worker: every limit below stays under it.
    visibility_timeout_s: float = 3600.0
    # Soft limit: the task stops its probe and stores `timeout`; hard limit: the pool child is killed.
    task_soft_time_limit_s: float = 1800.0
    task_time_limit_s: float = 1860.0
    # A job whose worker dies this many times (OOM, segfault in the worker) ends `crashed`.
    max_attempts: int = 3
    # A job whose worker stops gracefully (SIGTERM to its pool process, `cuprobe up` stopping) while it runs is handed
    # back: queued again, that attempt not counted in max_attempts, at most this many times (then a stop counts).
    max_hand_backs: int = 10
    # A job no worker picks up within this ends `unavailable` (no worker serves its queue).
    queue_deadline_s: float = 3600.0
    # A queued job older than this whose queue no live worker serves (the worker registry) ends
    # `unavailable` without waiting for its deadline: a GPU probe sent where no GPU worker runs fails fast.
    unserved_after_s: float = 120.0
    # For this long after the API starts, submission does not answer `unavailable` for lack of a worker: workers
    # started with it need a moment to be seen.
    unserved_grace_s: float = 10.0
    # Each worker publishes a registry heartbeat (queues, GPU, pids) this often, kept for worker_ttl_s: a worker
    # silent that long is gone, and the reconciler re-queues its running jobs.
    worker_beat_s: float = 5.0
    worker_ttl_s: float = 30.0
    # Readers of the registry (health, reconciler) read Redis at most this often, each read bounded by the timeout.
    registry_refresh_s: float = 2.0
    registry_timeout_s: float = 1.0
    # The store answers within this or the caller gets an error (SQLite busy timeout, PostgreSQL connect timeout).
    store_timeout_s: float = 10.0
    # A running job refreshes its heartbeat this often; one silent for stale_after_s is presumed lost.
    heartbeat_s: float = 5.0
    # A running job reads its cancel flag this often: a cancel stops the probe within about a second.
    cancel_poll_s: float = 0.25
    stale_after_s: float = 60.0
    # How often the reconciler compares the store with the broker; a queued job missing from Redis for
    # longer than requeue_grace_s is sent again (Redis lost it).
    reconcile_interval_s: float = 10.0
    requeue_grace_s: float = 15.0
    # GPU architecture a GPU probe is queued for when the request names none (queue gpu.<arch>).
    default_gpu_arch: str = "sm90"
    # Worker processes of the CPU worker (0: one per core).
    cpu_concurrency: int = 0
    # Sanitizer processes one GPU worker runs at once (its concurrency); 0 = from cores per GPU and free GPU
    # memory (service/worker/gpu_slots.py). `cuprobe doctor` and the worker's start-up line say which.
    gpu_slots: int = Field(default=0, ge=0, le=64)

    # --- sweeps (service/sweep) ---
    # Records one batched sweep process may keep: grouping costs memory per finding, not per record, and a
    # full narrow-matmul grid produces about 63,000 initcheck records in one process.
    sweep_max_records: int = Field(1_000_000, gt=0)
    # Where a sweep's [[test]] entries get their repository: mirrors and worktrees (service/sweep/checkout.py). GPU
    # workers on other hosts run the tests in these worktrees, so there it is shared storage at the same path.
    # Unset: DATA_DIR/repos.
    repo_dir: Path | None = None
    # Parse each run's sanitizer XML in child processes (service/sanitizer/pool.py) instead of the process that ran
    # it, where its records make that pay. A local sweep runs its K slots as threads of one process, and K parses at
    # once there would queue for its one interpreter lock (docs/sweep.md, "Parsing beside other slots"). Unset: on
    # where one process runs several slots (a local sweep with K > 1), off elsewhere.
    parse_in_children: bool | None = None
    # How many runs of this process may parse at once (a local sweep sets its K): with parse_in_children, the more,
    # the fewer records make a child pay.
    parse_slots: int = Field(default=1, ge=1, le=64)
    # With parse_in_children, a local sweep starts one fork server with the parser imported when it starts, and each
    # parse forks its children from it instead of starting processes that import the parser, about 0.5 s each
    # (service/sanitizer/forked.py). Off: each parse starts its own.
    fork_parsers: bool = True
    # The beat's sweep: the definition file and a crontab line (minute hour day month weekday); none when unset.
    sweep_definition: Path = Path("suites/nightly.toml")
    sweep_schedule: str | None = None
    # A sweep's running lock expires after this (a beat whose sweep died must not block the next forever).
    sweep_lock_ttl_s: float = 24 * 3600.0
    # Where a non-empty diff is POSTed as JSON (a chat or issue-tracker webhook); none when unset.
    sweep_webhook_url: str | None = None

    # --- service: HTTP API ---
    api_host: str = "127.0.0.1"
    api_port: int = 8000
    # Where the CLI finds the API.
    api_url: str = "http://127.0.0.1:8000"
    # Bearer token; required when set, and the API refuses to start without one when `command` is enabled.
    api_token: str | None = None
    # The `command` probe runs any allowlisted executable: off unless enabled (API and worker read this one name).
    command_enabled: bool = False
    # Its old name, read with a warning (it only ever switched the API's check).
    command_probe_enabled: bool | None = None
    # replay with an entry point or script runs the submitter's own code on the worker: off unless enabled.
    replay_probe_enabled: bool = False
    max_request_bytes: int = 64 * 1024
    # Artifacts (run.xml, logs) kept for download: older than this many days or beyond this total are pruned.
    artifact_retention_days: float = 30.0
    artifact_max_total_bytes: int = 20 * 1024**3

    @property
    def broker(self) -> str:
        return self.broker_url or "redis://127.0.0.1:6379/0"

    @property
    def repos(self) -> Path:
        return self.repo_dir or self.data_dir / "repos"

    @property
    def database(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'cuprobe.db'}"

    @model_validator(mode="after")
    def _one_command_switch(self) -> Settings:
        old = self.command_probe_enabled
        if old is not None:
            warnings.warn(
                "CUPROBE_COMMAND_PROBE_ENABLED is deprecated: set CUPROBE_COMMAND_ENABLED (API and worker alike)",
                FutureWarning,
                stacklevel=2,
            )
            self.command_enabled = self.command_enabled or old
        return self

    @model_validator(mode="after")
    def _limits_below_visibility(self) -> Settings:
        # Redis hands an unacked job to a second worker after visibility_timeout: a job must end before.
        if not self.task_soft_time_limit_s < self.task_time_limit_s < self.visibility_timeout_s:
            raise ValueError(
                "need task_soft_time_limit_s < task_time_limit_s < visibility_timeout_s, got "
                f"{self.task_soft_time_limit_s} / {self.task_time_limit_s} / {self.visibility_timeout_s}"
            )
        return self


@functools.lru_cache(maxsize=8)
def _settings_for(environment: frozenset[tuple[str, str]]) -> Settings:
    return Settings()


def get_settings() -> Settings:
    """The settings of this process's CUPROBE_* environment, built once per distinct environment (so a test
    that changes a variable sees it; tests may still build Settings(...) explicitly)."""
    return _settings_for(frozenset((k, v) for k, v in os.environ.items() if k.upper().startswith(ENV_PREFIX)))
