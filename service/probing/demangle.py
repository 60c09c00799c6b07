"""Runs that go without compute-sanitizer's demangler, and the check that nothing in their XML needed it.

compute-sanitizer demangles the function names of every record it prints as text (`--demangle full`, its
default): its console output, which it writes beside the XML. The XML names functions the same either way (on the
H200 with 2025.3.1.0, narrow-matmul's XML and that of a C++ template kernel, tests/gpu/programs/mangled_uninit.cu,
came out line for line the same with `--demangle no`, addresses aside; only the console text named
`_Z12tiled_matmulIfLb0EEvPKT_S2_PS0_iii` instead of `void tiled_matmul<float, (bool)0>(...)`). The demangling is
not free: a record-heavy run of a quarter of the nightly grid's unguarded cases (17,408 records) took 8.6 s and
16.3 CPU s with it and 6.5 s and 12.3 CPU s without, and the whole 384-case grid in one process 35.8 s against
22.0 s. With eight such processes at once the host's cores are the limit and the
difference was within the spread between runs.

cuprobe reads findings from the XML only, so a run that asks for no host backtrace (`--show-backtrace device` or
`no`: initcheck in sweeps and for torch probes) goes without the demangler; its console text (stdout.txt) then
names C++ functions mangled. Host frames are left alone: they were not measured. Should a sanitizer ever put a
mangled name into the XML of such a run, the run is made again with the demangler, so findings never depend on it.
"""

from __future__ import annotations

import mmap
import re
from pathlib import Path

from cuprobe.contract import Tool
from cuprobe.service.models import Backtrace
from cuprobe.service.sanitizer.options import installed_options

NO_DEMANGLING = ["--demangle", "no"]
# A function element whose name starts as the Itanium C++ ABI's mangled names do.
_MANGLED = re.compile(rb"<func>\s*_Z")


def skips_demangling(tool: Tool, backtrace: Backtrace | None, sanitizer: Path) -> bool:
    """Whether this run goes without the sanitizer's demangler: a sanitizer tool, no host backtrace asked (None is
    the sanitizer's default, `yes`), and a sanitizer that has the option."""
    return (
        tool is not Tool.NONE
        and backtrace in ("device", "no")
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
