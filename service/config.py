"""Settings, from CUPROBE_* environment variables (pydantic-settings), read through one cached accessor."""

from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from cuprobe.service.models import Backtrace
from cuprobe.service.removed_settings import refuse_removed

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
    # Wall-clock limit of one run where the request sets none: the whole process group is killed (`timeout`).
    timeout_s: float = Field(600.0, gt=0)
    # Progress watchdog: a probe that beats per case (Probe.beats) and then shows no progress (no new case, no XML,
    # no output) for this long is stopped and run once more; 0 turns it off (docs/outcomes.md, "Stalled runs").
    stall_s: float = 120.0
    # Warm starts (docs/sweep.md, "Warm starts"): a sweep with more processes than slots starts the next processes'
    # sanitizer and CUDA context while earlier ones run, and hands each its parameters when its turn comes. Off where
    # the GPU's memory or contexts are short: a spare holds a CUDA context while it waits.
    warm_starts: bool = True
    # On a GPU worker, a spare readied for a sweep's next job (service/worker/warm.py) that no job has taken this
    # long after the pool process's last job ends, so an idle worker does not hold a CUDA context for long.
    worker_spare_idle_s: float = Field(default=30.0, gt=0)
    # Confirm initcheck findings: re-run their cases bare with poisoned memory (docs/confirmation.md).
    confirm: bool = True
    # How many processes the confirmation's four bare re-runs take (docs/confirmation.md, "Re-runs sharing a process"):
    # at 2 the two 0xFF runs are in different processes, so determinism is checked across processes; 4 checks it
    # across all four at the price of four CUDA contexts per run; 1 needs one context, and checks determinism within
    # one process only. At 2 every sanitizer process of a cold 384-case sweep on an H100 reached its first case about
    # 0.3 s sooner than at 4. Re-runs taken from a caller's ready pool stay one a process.
    confirm_processes: int = Field(default=2, ge=1, le=4)
    # Caps on what one run keeps: records stored, XML bytes read, stdout/stderr bytes captured.
    max_records: int = Field(10_000, gt=0)
    max_xml_bytes: int = Field(512 * 1024 * 1024, gt=0)
    max_output_bytes: int = Field(4 * 1024 * 1024, gt=0)
    # Where each run's artifacts (run.xml, stdout, stderr, result.json) are written.
    data_dir: Path = Path("cuprobe-data")
    # cuprobe's cache of what it builds once and keeps: the poisoning torch allocator, per source version, and probe
    # processes' Python bytecode (pycache/). Unset: ~/.cache/cuprobe. Probe processes read it too.
    cache_dir: Path | None = None
    # Where the locks of the sanitizer port blocks live (one block per sanitizer process on a host): shared by every
    # worker and local run of the host. Unset: the system's temporary directory, cuprobe-sanitizer-ports/.
    port_lock_dir: Path | None = None
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
    # Soft limit: the task stops its probe and stores `timeout`. The hard limit, when the pool child is killed, follows
    # from it (task_time_limit_s).
    task_soft_time_limit_s: float = 1800.0
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
    # Each worker publishes a registry heartbeat (queues, GPU, pids) this often, kept for six beats (worker_ttl_s): a
    # worker silent that long is gone, and the reconciler re-queues its running jobs.
    worker_beat_s: float = Field(5.0, gt=0)
    # Readers of the registry (health, reconciler) read Redis at most this often, each read bounded by the timeout.
    registry_refresh_s: float = 2.0
    registry_timeout_s: float = 1.0
    # The store answers within this or the caller gets an error (SQLite busy timeout, PostgreSQL connect timeout).
    store_timeout_s: float = 10.0
    # A running job refreshes its heartbeat this often; one silent for stale_after_s is presumed lost.
    heartbeat_s: float = 5.0
    # A running job reads its cancel flag this often: a cancel stops the probe within about a second.
    cancel_poll_s: float = 0.25
    # A running job whose heartbeat is this old is presumed lost: the reconciler may hand it to another worker.
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
    # The beat's sweep: the definition file and a crontab line (minute hour day month weekday); none when unset.
    sweep_definition: Path = Path("suites/nightly.toml")
    sweep_schedule: str | None = None
    # A sweep's running lock expires after this (a beat whose sweep died must not block the next forever).
    sweep_lock_ttl_s: float = 24 * 3600.0
    # Where a non-empty diff is POSTed as JSON (a chat or issue-tracker webhook); none when unset.
    sweep_webhook_url: str | None = None

    # --- service: HTTP API ---
    # Where the API (`cuprobe serve`) listens.
    api_host: str = "127.0.0.1"
    api_port: int = 8000
    # Where the CLI finds the API.
    api_url: str = "http://127.0.0.1:8000"
    # Bearer token; required when set, and the API refuses to start without one when `command` is enabled.
    api_token: str | None = None
    # The `command` probe runs any allowlisted executable: off unless enabled (API and worker read this one name).
    command_enabled: bool = False
    # CUPROBE_COMMAND_ENABLED's old name, read with a warning (it only ever switched the API's check).
    command_probe_enabled: bool | None = None
    # The executables a service job's `command` probe may run: exact paths or globs over the resolved path
    # (wildcards stay within one segment), os.pathsep-separated; read by the probe on the worker (docs/service.md).
    command_allowlist: str = ""
    # replay with an entry point or script runs the submitter's own code on the worker: off unless enabled.
    replay_probe_enabled: bool = False
    # UNSAFE: run jobs that run code of their own (command and test jobs, replay of the user's program) without the
    # sandbox (service/probing/sandbox.py) where none can be made; such a job can then read whatever the worker's
    # user can, the store's files and the other processes' /proc entries included.
    unsafe_no_sandbox: bool = False
    # The largest request body the API accepts (413 beyond).
    max_request_bytes: int = 64 * 1024
    # Artifacts (run.xml, logs) kept for download: older than this many days or beyond this total are pruned.
    artifact_retention_days: float = 30.0
    artifact_max_total_bytes: int = 20 * 1024**3

    @property
    def task_time_limit_s(self) -> float:
        """The hard limit: the soft one plus a thirtieth of it (at least 5 s) for the task to store its `timeout`."""
        return self.task_soft_time_limit_s + max(5.0, self.task_soft_time_limit_s / 30)

    @property
    def worker_ttl_s(self) -> float:
        """How long a worker's registry heartbeat lives: six beats, so one or two late beats do not make it gone."""
        return 6 * self.worker_beat_s

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
        if not self.task_time_limit_s < self.visibility_timeout_s:
            raise ValueError(
                f"task_soft_time_limit_s {self.task_soft_time_limit_s:g} puts the hard limit at "
                f"{self.task_time_limit_s:g} s, which must stay below "
                f"visibility_timeout_s {self.visibility_timeout_s:g}"
            )
        return self


@functools.lru_cache(maxsize=8)
def _settings_for(environment: frozenset[tuple[str, str]]) -> Settings:
    refuse_removed(dict(environment))
    return Settings()


def get_settings() -> Settings:
    """The settings of this process's CUPROBE_* environment, built once per distinct environment (so a test
    that changes a variable sees it; tests may still build Settings(...) explicitly). RemovedSetting where the
    environment still sets a setting that no longer exists (service/removed_settings.py)."""
    return _settings_for(frozenset((k, v) for k, v in os.environ.items() if k.upper().startswith(ENV_PREFIX)))
