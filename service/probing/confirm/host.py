"""One set of the confirmation's re-runs for the jobs of a sweep's grid on one host, instead of one set per job.

A local sweep's batches are threads of one process and share one set of the four bare re-runs (confirm/shared.py).
Through the service each batch is a job, run by one of a GPU worker's pool processes, and each started its own four:
a 384-case grid in eight jobs started 32 bare processes where the local sweep starts four. So the sweep gives each
job of a grid a ticket (ConfirmShare: a key, the grid's parameters, how many jobs share it). On each host, the first
of them to start holds an flock on a folder under the data directory and runs the re-runs there; the others wait
for its `done.json` and decide their findings from the same files. What can go wrong falls back to what a job did
before, never to a verdict from runs it did not ask for:
- the owner's job is cancelled or handed back, or its process dies: the lock goes without `done.json`, and each job
  still waiting runs its own re-runs once its findings are known;
- a job that starts after an owner died without finishing runs its own re-runs from the start, as before;
- a job whose cases the grid's runs did not run (a torch case the early re-runs leave out) re-runs them after its
  run, as with its own early re-runs (confirm.not_rerun).
The folder is named by the key and a digest of the probe, tool and grid parameters, so two groups never meet in
one; the last job of the group to finish removes it, and a folder left for a day is removed by the next owner.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import threading
import time
import uuid
from pathlib import Path

from cuprobe.probes import registry
from cuprobe.service.config import Settings
from cuprobe.service.models import ProbeRequest, Tool
from cuprobe.service.models.confirm_share import ConfirmShare
from cuprobe.service.probing.confirm.decide import POISON_RUNS, BareRun, load_bare_run
from cuprobe.service.probing.confirm.policy import confirming, early_params
from cuprobe.service.probing.confirm.reruns import Reruns
from cuprobe.service.probing.launch import read_probe_result

log = logging.getLogger(__name__)
SHARE_DIR = "shared-confirm"
RUNS_DIR = "runs"
DONE = "done.json"
LOCK = "owner.lock"
OWNER = "owner.json"
LEFT = "left"
PRUNE_AFTER_S = 24 * 3600.0
POLL_S = 0.05
KEPT = ("mode", "ok", "message", "duration_s", "warm")  # what done.json keeps of each BareRun besides its files


def misfit(request: ProbeRequest, ticket: ConfirmShare) -> str | None:
    """Why `ticket`'s grid cannot serve `request` (it does not take in the request's cases), or None."""
    probe = registry.get(request.probe)
    try:
        own = probe.Params.model_validate(request.params)
        grid = probe.Params.model_validate(ticket.params)
    except ValueError as exc:
        return f"its params are not valid parameters of probe {probe.name}: {' '.join(str(exc).split())[:300]}"
    if probe.merged([grid, own]) != grid:
        return f"its params do not take in this job's cases (probe {probe.name} cannot merge the two into its params)"
    return None


def share_folder(settings: Settings, request: ProbeRequest, tool: Tool, ticket: ConfirmShare) -> Path:
    """Where the group's re-runs run on this host: the key and a digest of what they run."""
    what = json.dumps([request.probe, tool.value, ticket.params], sort_keys=True)
    return settings.data_dir / SHARE_DIR / f"{ticket.key}-{hashlib.sha256(what.encode()).hexdigest()[:16]}"


def join(
    request: ProbeRequest,
    ticket: ConfirmShare | None,
    settings: Settings,
    cancel: threading.Event,
    workdir: Path,
    member: str | None = None,
) -> HostReruns | None:
    """The re-runs `request` shares on this host under `ticket`, started now if it is the first there; None where it
    confirms with its own (no ticket, no confirmation, a ticket that does not fit, an owner that died
    before finishing them). `workdir`: the job's own, where its own re-runs go if it has to run them after all;
    `member`: who counts out of the group when done (the job's id, so that a job run again counts once)."""
    tool = request.tool or registry.get(request.probe).tools[0]
    if ticket is None or not confirming(request, tool, settings) or misfit(request, ticket):
        return None
    folder = share_folder(settings, request, tool, ticket)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:  # no folder to share in (a full or read-only disk): this job's own, which say what fails
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # the owner holds it: its re-runs are running
        os.close(fd)
        return HostReruns(request, ticket, settings, folder, cancel, workdir, member, owner=None)
    if (folder / DONE).exists():  # the owner has finished: read its files
        os.close(fd)
        return HostReruns(request, ticket, settings, folder, cancel, workdir, member, owner=None)
    if (folder / OWNER).exists():  # an owner started them and ended without finishing: this job runs its own
        os.close(fd)
        return None
    try:
        _prune(folder.parent, keep=folder)
        (folder / OWNER).write_text(json.dumps({"pid": os.getpid(), "started": time.time()}))
    except OSError:  # cannot say it owns them: this job's own; the others, finding no done.json, theirs
        os.close(fd)
        return None
    lead = request.model_copy(update={"timeout_s": ticket.members * (request.timeout_s or settings.timeout_s)})
    params = early_params(request.probe, ticket.params)
    try:
        reruns = Reruns(lead, params, None, settings, folder, folder=RUNS_DIR)
    except BaseException:
        os.close(fd)
        raise
    return HostReruns(request, ticket, settings, folder, cancel, workdir, member, owner=(fd, reruns))


class HostReruns:
    """One job's view of its group's re-runs on this host (confirm.EarlyReruns): the owner's, which it started
    (`owner`: its lock and its Reruns), or another job's, read from the folder once that one is done. The owner's
    are finished by a thread of their own as soon as they end — done.json written, the lock let go — so the other
    jobs wait for the re-runs, not for the owner's whole job."""

    def __init__(
        self,
        request: ProbeRequest,
        ticket: ConfirmShare,
        settings: Settings,
        folder: Path,
        cancel: threading.Event,
        workdir: Path,
        member: str | None,
        owner: tuple[int, Reruns] | None,
    ) -> None:
        self.request, self.ticket, self.settings, self.folder, self.cancel = request, ticket, settings, folder, cancel
        self.workdir, self.member = workdir, member or uuid.uuid4().hex
        self.shared_by, self.where = ticket.members, " on this host"
        self._owner = owner
        self._runs: dict[str, BareRun] | None = None
        self._spent = 0.0
        self._own: Reruns | None = None  # this job's own re-runs, where the owner ended without finishing
        self._finisher: threading.Thread | None = None
        if owner is not None:
            self._finisher = threading.Thread(target=self._finish, args=owner, name="confirm-host", daemon=True)
            self._finisher.start()

    @property
    def owns(self) -> bool:
        return self._owner is not None

    @property
    def spent_s(self) -> float:
        return self._own.spent_s if self._own is not None else self._spent

    def results(self) -> dict[str, BareRun]:
        if self._finisher is not None:
            self._finisher.join()
            if self._runs is None:  # the finisher failed (the log says how): this job's own
                self._runs = self._fallback()
        if self._runs is None:
            self._runs = self._read()
        return self._runs

    def _finish(self, fd: int, reruns: Reruns) -> None:
        """The owner's re-runs, once they have ended: kept for its job, and done.json for the others unless its job
        was cancelled; the lock goes either way."""
        try:
            runs = reruns.results()
            self._spent = reruns.spent_s
            if not self.cancel.is_set():
                done = {
                    "spent_s": self._spent,
                    "runs": {label: {name: getattr(r, name) for name in KEPT} for label, r in runs.items()},
                }
                part = self.folder / f"{DONE}.{uuid.uuid4().hex}"
                part.write_text(json.dumps(done))
                part.replace(self.folder / DONE)
            self._runs = runs
        except Exception:
            log.exception("the shared re-runs in %s failed", self.folder)
        finally:
            os.close(fd)  # the waiting jobs see the lock go: with done.json they read it, without it run their own

    def _read(self) -> dict[str, BareRun]:
        limit = self.ticket.members * (self.request.timeout_s or self.settings.timeout_s) + 60
        given_up = time.monotonic() + limit
        while not (self.folder / DONE).exists():
            if self.cancel.is_set() or time.monotonic() > given_up or not _held(self.folder / LOCK):
                break
            time.sleep(POLL_S)
        if (self.folder / DONE).exists() and (runs := self._load()) is not None:
            return runs
        return self._fallback()

    def _fallback(self) -> dict[str, BareRun]:
        """This job's own re-runs, after the shared ones could not serve it: the owner ended without them (cancelled,
        handed back, killed, failed), or their files are gone."""
        if self.cancel.is_set():
            return {label: BareRun(label, mode, False, "cancelled") for label, mode in POISON_RUNS}
        params = early_params(self.request.probe, self.request.params)
        self._own = Reruns(self.request, params, None, self.settings, self.workdir)
        self.shared_by, self.where = 1, ""
        return self._own.results()

    def _load(self) -> dict[str, BareRun] | None:
        """The owner's runs from its files; None where they cannot be read back as it left them."""
        try:
            done = json.loads((self.folder / DONE).read_text())
        except (OSError, ValueError):
            return None
        runs = {}
        for label, entry in done["runs"].items():
            out = self.folder / RUNS_DIR / label.replace("#", "-") / "result.json"
            if entry["ok"]:
                probe, unreadable = read_probe_result(out)
                try:
                    run = load_bare_run(label, entry["mode"], probe, unreadable, out, entry["duration_s"])
                except (OSError, ValueError, KeyError):  # its arrays gone or cut short
                    return None
                if not run.ok:
                    return None
            else:
                run = BareRun(label, entry["mode"], False, entry["message"], duration_s=entry["duration_s"])
            run.warm = entry["warm"]
            runs[label] = run
        self._spent = float(done["spent_s"])
        return runs

    def close(self) -> None:
        """Wait for the owner's re-runs (stopped where its job was cancelled), and count this job out of the group:
        the last one out removes the folder."""
        if self._owner is not None:
            if self.cancel.is_set():
                self._owner[1].close()
            self.results()
        if self._own is not None:
            self._own.close()
        left = self.folder / LEFT
        with contextlib.suppress(OSError):
            left.mkdir(exist_ok=True)
            (left / self.member).touch()
            if len(list(left.iterdir())) >= self.ticket.members:
                shutil.rmtree(self.folder, ignore_errors=True)


def _held(lock: Path) -> bool:
    """Whether some process holds `lock` (its owner's re-runs still run)."""
    try:
        fd = os.open(lock, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _prune(root: Path, keep: Path) -> None:
    """Remove the group folders left for more than a day (a group whose last job never finished) whose owner is gone."""
    cutoff = time.time() - PRUNE_AFTER_S
    for folder in root.iterdir():
        with contextlib.suppress(OSError):
            if folder != keep and folder.is_dir() and folder.stat().st_mtime < cutoff and not _held(folder / LOCK):
                shutil.rmtree(folder, ignore_errors=True)
