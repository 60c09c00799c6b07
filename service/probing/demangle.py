"""Runs that do not need compute-sanitizer's demangler, and the check that it was not needed after all.

compute-sanitizer demangles the function names of every record it writes (`--demangle full`, its default). On the
H200 that is about a quarter of a record-heavy initcheck run's CPU even where no name is mangled: a quarter of the
nightly grid's unguarded cases, 17,408 records, took 8.6 s and 16.3 CPU s as a sweep runs them and 6.5 s and 12.3
CPU s with `--demangle no`, with the same records, XML size and findings (docs/sweep.md, "Session 13").

A name is only demangled if it is mangled (C++ linkage, `_Z...`). A probe whose own kernels all have C-linkage
names (Probe.c_linkage) and a run that asks for no host backtrace (whose frames are the C++ of the libraries
underneath) leave nothing for the demangler; such runs get `--demangle no`. A library kernel could still show up in
a record (a torch case's cuBLAS kernel reading memory nobody wrote): its name would be mangled, so after the run the
XML is searched for a mangled function name, and a run that holds one is run again with the demangler. Findings are
therefore always those of a run with the demangler.
"""

from __future__ import annotations

import mmap
import re
from pathlib import Path

from probes.contract import Tool
from service.config import Settings
from service.models import Backtrace
from service.probing.admission import Admission
from service.sanitizer.options import installed_options

NO_DEMANGLING = ["--demangle", "no"]
# A function element whose name starts as the Itanium C++ ABI's mangled names do.
_MANGLED = re.compile(rb"<func>\s*_Z")


def skips_demangling(admitted: Admission, backtrace: Backtrace | None, sanitizer: Path, settings: Settings) -> bool:
    """Whether this run can go without the sanitizer's demangler: a sanitizer tool, no host backtrace asked (None is
    the sanitizer's default, `yes`), a probe with C-linkage kernels only, a sanitizer that has the option, and the
    setting on."""
    return (
        settings.skip_demangling
        and admitted.tool is not Tool.NONE
        and backtrace in ("device", "no")
        and admitted.probe.c_linkage
        and "--demangle" in installed_options(sanitizer).options
    )


def holds_mangled_names(xml: Path) -> bool:
    """Whether a run's XML names a mangled function anywhere (read through a memory map, without parsing)."""
    try:
        with xml.open("rb") as handle:
            if xml.stat().st_size == 0:
                return False
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _MANGLED.search(data) is not None
    except (OSError, ValueError):
        return False
