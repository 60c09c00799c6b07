"""Probe programs that run inside compute-sanitizer, one module each, their registry, and the plug-in API.

A probe of another package (registered under the `cuprobe.probes` entry point) takes everything it needs from here:

    from cuprobe.probes import Expectation, Probe, ProbeRefused, ProbeUnavailable, Recorder, Tool

The names are loaded on first use, so importing one probe module does not import them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cuprobe.contract import Expectation, Tool
    from cuprobe.probes.base import Probe, ProbeRefused, ProbeUnavailable, Recorder

_API = {
    "Expectation": "cuprobe.contract",
    "Tool": "cuprobe.contract",
    "Probe": "cuprobe.probes.base",
    "ProbeRefused": "cuprobe.probes.base",
    "ProbeUnavailable": "cuprobe.probes.base",
    "Recorder": "cuprobe.probes.base",
}
__all__ = ["Expectation", "Probe", "ProbeRefused", "ProbeUnavailable", "Recorder", "Tool"]


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
