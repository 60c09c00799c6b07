"""The probe registry: cuprobe's own probes plus those other packages register under `cuprobe.probes`."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import Any

from cuprobe.probes.base import Probe

ENTRY_POINT_GROUP = "cuprobe.probes"
BUILTIN: dict[str, str] = {
    "uninit-read": "cuprobe.probes.uninit_read:UninitRead",
    "planted": "cuprobe.probes.planted:Planted",
    "planted-torch": "cuprobe.probes.planted_torch:PlantedTorch",
    "selftest": "cuprobe.probes.selftest:Selftest",
    "narrow-matmul": "cuprobe.probes.narrow_matmul:NarrowMatmul",
    "narrow-linear": "cuprobe.probes.narrow_linear:NarrowLinear",
    "bf16-matmul": "cuprobe.probes.bf16_matmul:Bf16Matmul",
    "determinism": "cuprobe.probes.determinism:Determinism",
    "gradcheck": "cuprobe.probes.gradcheck:Gradcheck",
    "matmul-throughput": "cuprobe.probes.matmul_throughput:MatmulThroughput",
    "command": "cuprobe.probes.command:Command",
    "replay": "cuprobe.probes.replay.probe:Replay",
}


class UnknownProbe(LookupError):
    """No probe of that name is registered."""


def _load(target: str) -> type[Probe[Any]]:
    module_name, _, attr = target.partition(":")
    probe = getattr(importlib.import_module(module_name), attr)
    if not (isinstance(probe, type) and issubclass(probe, Probe)):
        raise TypeError(f"{target} is not a cuprobe Probe subclass")
    return probe


def available() -> dict[str, str]:
    """Every probe name and where it is defined, built-in first; a plug-in cannot shadow a built-in."""
    found = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.value)
    return found


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """` (did you mean NAME?)` for the names closest to a misspelt `name` (difflib), or nothing when none is close."""
    close = difflib.get_close_matches(name, list(names), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def get(name: str) -> Probe[Any]:
    """An instance of the probe called `name`. A built-in is found without reading every installed package's entry
    points (a plug-in cannot shadow one); any other name is looked up among them afresh, so a plug-in installed
    while the service runs is found."""
    target = BUILTIN.get(name)
    if target is None:
        targets = available()
        if name not in targets:
            close = did_you_mean(name, targets)
            raise UnknownProbe(f"unknown probe {name!r}{close}; known probes: {', '.join(sorted(targets))}")
        target = targets[name]
    return _load(target)()
