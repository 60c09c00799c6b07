"""Which kernel launches a filtered run checked, from compute-sanitizer's `--dump-kernel-launches` records.

A kernel or NVTX filter that selects no launch leaves nothing checked, and without the dump the sanitizer says
nothing about it: such a run reads clean. compute-sanitizer 2026.4 and later can dump every launch: one
`LaunchInfo` record per launch in the saved XML, `<filtered>true</filtered>` in its `<what>` where the filters left
it unchecked (tests/data/captures/2026.4.0.0/launches_*). The sanitizer counts those records as errors in its
summary and exits with the error exit code because of them, so a run that asked for the dump has them taken back
out of both (`discount`) before it is classified.

Records at `--print-level warn` would leave the launches out of the XML (captured too), so the dump runs at the
level it sets itself (info).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cuprobe.contract import is_control_kernel
from cuprobe.service.sanitizer.summary import SanitizerSummary

DUMP_FLAG = "--dump-kernel-launches"
EXAMPLES = 3  # kernel names kept per side, in launch order


@dataclass
class Launches:
    """Kernel launches the sanitizer reported, split by whether its filters let the tool check them. The
    confirmer's planted kernels (checked on purpose in every confirming run) are counted apart, never as the
    program's own."""

    checked: int = 0
    filtered: int = 0
    control: int = 0
    checked_kernels: list[str] = field(default_factory=list)
    filtered_kernels: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Every launch record: what the sanitizer's summary counted among its errors."""
        return self.checked + self.filtered + self.control

    def add(self, kernel: str | None, filtered: bool) -> None:
        if is_control_kernel(kernel):
            self.control += 1
            return
        name = kernel or "(unnamed)"
        if filtered:
            self.filtered += 1
            _remember(self.filtered_kernels, name)
        else:
            self.checked += 1
            _remember(self.checked_kernels, name)

    def absorb(self, later: Launches) -> None:
        """Fold in the launches of the next piece of the same file."""
        self.checked += later.checked
        self.filtered += later.filtered
        self.control += later.control
        for name in later.checked_kernels:
            _remember(self.checked_kernels, name)
        for name in later.filtered_kernels:
            _remember(self.filtered_kernels, name)


def _remember(names: list[str], name: str) -> None:
    if len(names) < EXAMPLES and name not in names:
        names.append(name)


def discount(
    summary: SanitizerSummary | None, launches: Launches, returncode: int | None, error_exitcode: int
) -> int | None:
    """Take the launch records back out of the summary's error count (in place) and return the exit status the
    run would have had without them: the error exit code only where other errors remain."""
    if summary is None or summary.errors is None:
        return returncode
    summary.errors = max(0, summary.errors - launches.total)
    if returncode == error_exitcode and summary.errors == 0 and launches.total:
        return 0
    return returncode


def _names(names: list[str], count: int) -> str:
    return ", ".join(names) + (", ..." if count > len(names) else "")


def nothing_checked(launches: Launches, selected: list[str]) -> str | None:
    """The message of a run whose filters selected none of the program's launches; None where some were checked."""
    if launches.checked:
        return None
    chosen = ", ".join(selected)
    if not launches.filtered:
        return f"nothing was checked: compute-sanitizer reported no kernel launch of the program (filters: {chosen})"
    return (
        f"nothing was checked: {chosen} selected none of the program's {launches.filtered} kernel launch(es) "
        f"(kernels: {_names(launches.filtered_kernels, launches.filtered)}); compute-sanitizer's launch dump marks "
        "every one filtered"
    )


def checked_note(launches: Launches, selected: list[str]) -> str:
    """What a clean filtered run checked, from the dump."""
    return (
        f"{launches.checked} of {launches.checked + launches.filtered} kernel launch(es) checked: "
        f"{', '.join(selected)} selected {_names(launches.checked_kernels, launches.checked)} (compute-sanitizer's "
        "launch dump)"
    )


def unchecked_note(launches: Launches) -> str:
    """How many of the program's launches the filters left unchecked, naming a few of their kernels."""
    return (
        f"the filters left {launches.filtered} of {launches.checked + launches.filtered} kernel launch(es) unchecked "
        f"(kernels: {_names(launches.filtered_kernels, launches.filtered)})"
    )


def unfired_controls(launches: Launches | None, selected: list[str]) -> str:
    """Why a positive control that stayed clean did: the instrument, or (the launch dump says) the run's filters."""
    if launches is None and selected:
        return (
            f"the instrument is broken, or {', '.join(selected)} left the control's kernels unchecked (this "
            "compute-sanitizer does not say which launches its filters checked; 2026.4 and later do)"
        )
    if launches is None or not launches.filtered:
        return "the instrument is broken"
    if (why := nothing_checked(launches, selected)) is not None:
        return f"{why}, so no positive control could fire"
    return (
        f"{unchecked_note(launches)}: a positive control whose kernels are among them cannot fire, so the run proves "
        "nothing about them (choose cases whose kernels the filters check, or widen the filters)"
    )
