"""PlannedRun: a probe run ready to start, as the runner plans it and a spare (spares.py) holds it."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from cuprobe.service.probing.admission import Admission
from cuprobe.service.sanitizer.ports import PortLease


class PlannedRun(NamedTuple):
    """A run ready to start: the admitted request, the command and its environment, its files, its sanitizer."""

    admitted: Admission
    cmd: list[str]
    env: dict[str, str]
    workdir: Path
    xml: Path
    result_path: Path
    sanitizer: Path | None
    version: str | None
    # This run's block of sanitizer ports (service.sanitizer.ports): release it once the command has exited.
    ports: PortLease | None
    # Run with `--demangle no` (service/probing/demangle.py): its XML is checked for mangled names afterwards.
    raw_names: bool = False
    # Run with --dump-kernel-launches (its filters select launches): service/sanitizer/launches.py.
    launch_dump: bool = False
    # Run in the sandbox (a job's own code: service/probing/sandbox.py); its confirmation's re-runs are too.
    sandboxed: bool = False
