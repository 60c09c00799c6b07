"""Library findings: a kernel with no user source whose code lives in a library, with or without host frames."""

from __future__ import annotations

import gzip
import re

from cuprobe.contract import Tool
from cuprobe.service.sanitizer.findings import is_library, user_location
from cuprobe.service.sanitizer.parse import parse_xml
from cuprobe.service.sanitizer.records import Location, RawRecord
from tests.conftest import BOX_ROOT, DATA, VERSIONS, capture, xml_of

BF16_STDOUT = DATA / "probes-catalog" / "bf16_initcheck" / "stdout.txt.gz"


def torch_record() -> tuple[RawRecord, list[tuple[str | None, str | None]]]:
    """The first record of bf16-matmul under initcheck on the H200 (text output): kernel name and host frames."""
    with gzip.open(BF16_STDOUT, "rt") as text:
        head = [next(text) for _ in range(60)]
    kernel = re.sub(r"^=+\s+at\s+|\+0x[0-9a-f]+\s*$", "", head[2]).strip()
    frames = [
        (m.group(1).strip() or None, m.group(2))
        for line in head
        if (m := re.match(r"^=+\s+Host Frame: (.*) \[0x[0-9a-f]+\] in (\S+)$", line.rstrip()))
    ]
    record = RawRecord("Initcheck", Tool.INITCHECK, "uninitialized-global-read", head[1], where=Location(func=kernel))
    return record, frames


def test_a_torch_kernel_with_device_only_backtrace_is_library_by_its_name() -> None:
    record, _ = torch_record()
    assert record.where.func and record.where.func.startswith("void at::native::unrolled_elementwise_kernel")
    assert record.host_frames() == []  # --show-backtrace device: no host stack at all
    assert is_library(record, user_location(record))


def test_a_torch_kernel_launched_from_libtorch_is_library_by_its_launcher() -> None:
    record, frames = torch_record()
    record.where = Location(func="an_unknown_kernel_name")
    record.host_stack = frames
    assert frames[0][1] == "libcudart.so.13" and frames[2][1] == "libtorch_cuda.so"
    assert is_library(record, user_location(record))


def test_user_kernels_are_not_library() -> None:
    case = capture(VERSIONS[1], "probe_narrow-matmul_initcheck")
    findings = parse_xml(xml_of(case), roots=[BOX_ROOT]).findings
    assert findings and not any(f.library for f in findings)
    nameless = RawRecord("Initcheck", Tool.INITCHECK, "k", "t", where=Location(func="my_kernel"))
    assert not is_library(nameless, user_location(nameless))
