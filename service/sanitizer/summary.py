"""Read compute-sanitizer's own text lines: the summary count and what it said went wrong."""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

_ERROR_SUMMARY = re.compile(r"^=+ ERROR SUMMARY: (\d+) errors?\s*$", re.M)
_NOT_PRINTED = re.compile(r"^=+ ERROR SUMMARY: (\d+) errors? were not printed", re.M)
_RACECHECK_SUMMARY = re.compile(
    r"^=+ RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", re.M
)
_LEAK_SUMMARY = re.compile(r"^=+ LEAK SUMMARY: (\d+) bytes leaked in (\d+) allocations?", re.M)
_ERROR_LINE = re.compile(r"^=+ (?:Error|Internal Sanitizer Error): (.+)$", re.M)

NOT_CUDA = "Target application terminated before first instrumented API call"
MISSING_PROGRAM = "Target application doesn't exist or is not a valid executable"
PROCESS_FAILED = "process didn't terminate successfully"
RETURNED_ERROR = "Target application returned an error"  # it exited non-zero (also printed after a crash)
INTERNAL_ERROR = "Internal Sanitizer Error"


@dataclass
class SanitizerSummary:
    """The counts and markers in the sanitizer's text output."""

    errors: int | None = None  # ERROR SUMMARY, or racecheck's hazards displayed
    not_printed: int = 0  # errors beyond --print-limit: a cap, not a measurement
    racecheck_errors: int | None = None
    racecheck_warnings: int | None = None
    leaked_bytes: int | None = None
    not_cuda: bool = False
    missing_program: bool = False
    process_failed: bool = False
    returned_error: bool = False
    internal_error: str | None = None
    error_lines: tuple[str, ...] = ()
    # Every summary line seen, in order, when they do not all say the same: a program can print one itself.
    disagreeing: tuple[str, ...] = ()

    @property
    def present(self) -> bool:
        return self.errors is not None


def read_summary(text: str) -> SanitizerSummary:
    """Parse the sanitizer lines of `text` (stdout, or its tail: the summary is always last)."""
    summary = SanitizerSummary()
    # One rule for every tool: the final summary line is the sanitizer's (it prints it after its target ended); an
    # earlier one that says otherwise was printed by someone else, so the count cannot be trusted either way.
    found = sorted([*_RACECHECK_SUMMARY.finditer(text), *_ERROR_SUMMARY.finditer(text)], key=lambda m: m.start())
    if found:
        last = found[-1]
        if last.re is _RACECHECK_SUMMARY:
            summary.racecheck_errors, summary.racecheck_warnings = int(last.group(2)), int(last.group(3))
        summary.errors = int(last.group(1))
        said = [m.group(0).lstrip("= ").strip() for m in found]
        if len(set(said)) > 1:
            summary.disagreeing = tuple(said)
    if match := _NOT_PRINTED.search(text):
        summary.not_printed = int(match.group(1))
    if match := _LEAK_SUMMARY.search(text):
        summary.leaked_bytes = int(match.group(1))
    summary.not_cuda = NOT_CUDA in text
    summary.missing_program = MISSING_PROGRAM in text
    summary.process_failed = PROCESS_FAILED in text
    summary.returned_error = RETURNED_ERROR in text
    lines = tuple(m.strip() for m in _ERROR_LINE.findall(text))
    summary.error_lines = lines
    internal = [line for line in text.splitlines() if INTERNAL_ERROR in line]
    summary.internal_error = internal[0].lstrip("= ").strip() if internal else None
    return summary


DEFAULT_PREFIX = "========= "
_SUMMARY_ANY_PREFIX = re.compile(r"^(.*?)(?:ERROR|RACECHECK) SUMMARY: \d+ ", re.M)


def unprefixed(text: str, prefix: str) -> str:
    """`text` with compute-sanitizer's `--prefix` at the start of its lines put back to the default `========= `."""
    if prefix == DEFAULT_PREFIX:
        return text
    return re.sub(rf"^{re.escape(prefix)} ?", DEFAULT_PREFIX, text, flags=re.M)  # with or without its own space


def other_prefix(text: str) -> str | None:
    """The line start before an `ERROR SUMMARY:` (or racecheck's) line that is not the default prefix, if any:
    a log written with `--prefix`, whose summary read_summary cannot see until it is given that prefix."""
    for match in _SUMMARY_ANY_PREFIX.finditer(text):
        if not re.fullmatch(r"=+ ", match.group(1)):
            return match.group(1)
    return None


LOG_CHUNK = 1 << 20  # what a saved log is read (and gunzipped) by at a time


class LogTooLarge(ValueError):
    """A saved log (after gunzip) longer than the byte cap: it is not read on, and nothing in it is believed."""


def read_log(path: Path, max_bytes: int) -> str:
    """The text of a saved log, gunzipped as a stream when it is gzip (by its magic bytes, whatever its name); past
    `max_bytes` (after gunzip, the cap the XML has) LogTooLarge, without reading the rest."""
    with path.open("rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        data = bytearray()
        with gzip.GzipFile(fileobj=raw, mode="rb") if gzipped else raw as stream:
            while len(data) <= max_bytes and (chunk := stream.read(min(LOG_CHUNK, max_bytes + 1 - len(data)))):
                data += chunk
    if len(data) > max_bytes:
        size = "decompresses to" if gzipped else "holds"
        raise LogTooLarge(
            f"{path} {size} more than {max_bytes} bytes (CUPROBE_MAX_XML_BYTES, the cap the XML has): not read on"
        )
    return data.decode("utf-8", errors="replace")


def is_text_log(path: Path) -> bool:
    """Whether `path` is compute-sanitizer's text output (its `=========` lines) rather than its XML."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            head = f.read(4096).lstrip()
    except OSError:
        return False
    return not head.startswith(b"<") and b"========= " in head
