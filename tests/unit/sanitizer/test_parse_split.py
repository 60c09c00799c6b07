"""The split parse (records cut at boundaries, several processes, groups merged) against the previous parser."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest

import cuprobe.service.sanitizer.chunks as chunks
import cuprobe.service.sanitizer.parse as parse_module
import cuprobe.service.sanitizer.pool as pool
from bench.previous_parser.parse import parse_xml as previous
from cuprobe.contract import ProbeResult
from cuprobe.service.probing.runner import allocations_of
from cuprobe.service.sanitizer.parse import parse_xml
from cuprobe.service.sanitizer.xmlstream import check_prolog
from tests.conftest import BOX_ROOT, CAPTURES, previous_parser_cases, xml_bytes, xml_of

CASES = sorted(p.parent for p in CAPTURES.glob("*/*/run.xml*"))
BIG = [c for c in CASES if xml_bytes(c).count(b"</record>") > 20]
WITHOUT_LAUNCHES = previous_parser_cases()


def _plain(case: Path, tmp_path: Path) -> Path:
    """The capture as a plain file (the split path reads plain files; .gz goes through one stream)."""
    out = tmp_path / "run.xml"
    out.write_bytes(xml_bytes(case))
    return out


def _allocations(case: Path) -> list[Any]:
    result = case / "result.json"
    return allocations_of(ProbeResult.model_validate_json(result.read_text())) if result.exists() else []


def view(result: Any) -> dict[str, object]:
    """Everything a user sees of a parse, every field of every Finding included (records kept: the previous
    parser stopped at the record cap; this one keeps counting past it, checked below)."""
    return {
        "records": getattr(result, "kept", result.records),
        "truncated": result.truncated,
        "truncated_at_case": result.truncated_at_case,
        "error": result.error is not None,
        "hostile": result.hostile,
        "tool": result.tool,
        "findings": [f.model_dump() for f in result.findings],
    }


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of about one record, so every capture is cut many times and merged."""
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 1500)


@pytest.mark.parametrize("case", WITHOUT_LAUNCHES, ids=lambda c: f"{c.parent.name}/{c.name}")
@pytest.mark.parametrize(
    "caps", [{}, {"max_records": 7}, {"max_records": 100}, {"max_bytes": 9000}, {"max_bytes": 300_000}]
)
def test_split_parse_equals_previous_parser_on_every_capture(
    case: Path, caps: dict[str, int], tmp_path: Path, small_chunks: None
) -> None:
    plain = _plain(case, tmp_path)
    kw: dict[str, Any] = {"roots": [BOX_ROOT], "allocations": _allocations(case), **caps}
    expected = view(previous(plain, **kw))
    split, stream = parse_xml(plain, workers=1, **kw), parse_xml(xml_of(case), workers=1, **kw)
    assert view(split) == expected
    assert view(stream) == expected  # gzipped: the one-stream path
    # Past the record cap both paths count every record and flag the same memory.
    assert split.records == stream.records and split.flagged.keys() == stream.flagged.keys()
    assert {k: (m.records, m.merged()) for k, m in split.flagged.items()} == {
        k: (m.records, m.merged()) for k, m in stream.flagged.items()
    }
    if "max_bytes" not in caps:
        assert split.records == xml_bytes(case).count(b"</record>")


@pytest.mark.parametrize("case", BIG, ids=lambda c: f"{c.parent.name}/{c.name}")
def test_the_split_really_cuts_the_captures(case: Path, tmp_path: Path, small_chunks: None) -> None:
    plain = _plain(case, tmp_path)
    assert len(chunks.plan(plain, check_prolog(plain), 1 << 40)) > 10  # else the test above compares nothing new


def test_child_processes_give_the_same_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 200_000)
    monkeypatch.setattr(parse_module, "PARALLEL_MIN_BYTES", 0)  # both files are split, however small
    used: list[int] = []
    real, local = pool.ChunkWorker.parse, pool.parse_chunk
    child_answered = threading.Event()

    def counted(self: pool.ChunkWorker, chunk: chunks.Chunk) -> chunks.ChunkResult:
        used.append(chunk.index)
        answer = real(self, chunk)
        child_answered.set()
        return answer

    def after_a_child(ctx: chunks.Context, chunk: chunks.Chunk, limit: int | None = None) -> chunks.ChunkResult:
        child_answered.wait(timeout=60)  # this process's lane waits until a child has parsed a chunk
        return local(ctx, chunk, limit)

    monkeypatch.setattr(pool.ChunkWorker, "parse", counted)
    monkeypatch.setattr(pool, "parse_chunk", after_a_child)
    for name in ("2025.3.1.0/racecheck_race_hazard", "2026.4.0.0/probe_narrow-matmul_initcheck"):
        child_answered.clear()
        plain = _plain(CAPTURES / name, tmp_path)
        kw: dict[str, Any] = {"roots": [BOX_ROOT], "allocations": _allocations(CAPTURES / name)}
        assert view(parse_xml(plain, workers=3, **kw)) == view(previous(plain, **kw))
        assert child_answered.is_set()  # the children parsed some of this file's chunks
    assert len(used) > 2


def _not_here(ctx: chunks.Context, chunk: chunks.Chunk, limit: int | None = None) -> chunks.ChunkResult:
    raise AssertionError("a chunk was parsed in the calling process")


def test_in_children_parses_every_chunk_in_a_child_below_the_size_for_two_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "2026.4.0.0/probe_narrow-matmul_initcheck"  # 39.5 MB
    plain = _plain(CAPTURES / name, tmp_path)
    kw: dict[str, Any] = {"roots": [BOX_ROOT], "allocations": _allocations(CAPTURES / name)}
    expected = view(previous(plain, **kw))
    assert plain.stat().st_size < pool.PARALLEL_MIN_BYTES and pool.worth_children(plain, plain.stat().st_size, 4)
    monkeypatch.setattr(pool, "parse_chunk", _not_here)  # this process's lane (the children are other processes)
    assert view(parse_xml(plain, in_children=4, **kw)) == expected
    with pytest.raises(AssertionError, match="parsed in the calling process"):  # the control: by default, here
        parse_xml(plain, **kw)


@pytest.mark.parametrize("caps", [{"max_records": 100}, {"max_records": 6000}, {"max_bytes": 5_000_000}])
def test_in_children_keeps_the_caps(caps: dict[str, int], tmp_path: Path) -> None:
    name = "2026.4.0.0/probe_narrow-matmul_initcheck"
    plain = _plain(CAPTURES / name, tmp_path)
    kw: dict[str, Any] = {"roots": [BOX_ROOT], "allocations": _allocations(CAPTURES / name), **caps}
    here, children = parse_xml(plain, **kw), parse_xml(plain, in_children=4, **kw)
    assert here.truncated and view(children) == view(here) == view(previous(plain, **kw))
    assert children.records == here.records and children.flagged.keys() == here.flagged.keys()


def test_in_children_parses_a_file_of_few_records_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below CHILDREN_MIN_RECORDS a child's start-up costs more than waiting for the other threads' parses."""
    plain = _plain(CAPTURES / "2026.4.0.0/initcheck_many", tmp_path)  # 300 records
    assert not pool.worth_children(plain, plain.stat().st_size, 4)
    monkeypatch.setattr(pool, "ChunkWorker", _not_here)
    assert parse_xml(plain, in_children=True, roots=[BOX_ROOT]).records == 300


def test_in_children_goes_by_records_not_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep's XML has device backtraces only (0.8 KB a record, not 6 KB): on the H200 a 12.5 MB file of 16,000
    records took 3-5 s to parse beside three others in one process. The 39.5 MB capture without its host stacks is
    such a file (5 MB, 6,624 records): beside three others it is parsed in children, with the same findings."""
    name = "2026.4.0.0/probe_narrow-matmul_initcheck"
    device = tmp_path / "device.xml"
    device.write_bytes(re.sub(rb"<hostStack>.*?</hostStack>\s*", b"", xml_bytes(CAPTURES / name), flags=re.S))
    size = device.stat().st_size
    assert size < pool.CHILDREN_MIN_BYTES and pool.worth_children(device, size, 4)
    kw: dict[str, Any] = {"roots": [BOX_ROOT], "allocations": _allocations(CAPTURES / name)}
    here = parse_xml(device, **kw)
    assert here.records == 6624 and here.findings
    monkeypatch.setattr(pool, "parse_chunk", _not_here)
    assert view(parse_xml(device, in_children=4, **kw)) == view(here)


def test_in_children_parses_here_when_no_child_can_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = "2026.4.0.0/probe_narrow-matmul_initcheck"
    plain = _plain(CAPTURES / name, tmp_path)
    kw: dict[str, Any] = {"roots": [BOX_ROOT], "allocations": _allocations(CAPTURES / name)}

    def no_process(*args: object, **kwargs: object) -> None:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(pool.subprocess, "Popen", no_process)
    result = parse_xml(plain, in_children=4, **kw)
    assert result.error is None and view(result) == view(previous(plain, **kw))


def test_record_cap_counts_and_flags(tmp_path: Path, small_chunks: None) -> None:
    plain = _plain(CAPTURES / "2026.4.0.0/initcheck_many", tmp_path)
    capped = parse_xml(plain, roots=[BOX_ROOT], max_records=50)
    # The record cap keeps counting: all 300 records counted, 50 kept, every one's memory flagged.
    assert capped.truncated and capped.records == 300 and capped.kept == 50
    assert sum(f.count for f in capped.findings) == 50
    assert sum(m.records for m in capped.flagged.values()) == 300
    exact = parse_xml(plain, roots=[BOX_ROOT], max_records=300)  # exactly as many as the file holds
    assert not exact.truncated and exact.records == 300


@pytest.mark.parametrize("cap", [5000, 100_000, 400_000])
def test_byte_cap_keeps_the_records_that_end_before_it(cap: int, tmp_path: Path) -> None:
    plain = _plain(CAPTURES / "2026.4.0.0/initcheck_many", tmp_path)
    whole = [m.end() for m in re.finditer(rb"</record>", plain.read_bytes())]
    result = parse_xml(plain, roots=[BOX_ROOT], max_bytes=cap)
    assert result.truncated and result.error is None and result.bytes_read == cap
    assert result.records == sum(1 for end in whole if end <= cap) == sum(f.count for f in result.findings)


def test_pieces_that_do_not_parse_alone_fall_back_to_one_stream(tmp_path: Path, small_chunks: None) -> None:
    real = xml_bytes(CAPTURES / "2026.4.0.0/racecheck_race_hazard")
    body = real.replace(b"<record>", b"<!-- </record> --><record>", 5)  # a cut inside a comment
    odd = tmp_path / "odd.xml"
    odd.write_bytes(body)
    assert view(parse_xml(odd, roots=[BOX_ROOT], workers=1)) == view(previous(odd, roots=[BOX_ROOT]))
    assert parse_xml(odd, roots=[BOX_ROOT]).records == 4208


def _hostile(tmp_path: Path, doctype: str, *, comment: bool = False, utf16: bool = False) -> Path:
    real = xml_bytes(CAPTURES / "2025.3.1.0/initcheck_uninit").decode()
    body = real.split("\n", 1)[1].replace("<text>Uninitialized", "<text>&boom;Uninitialized", 1)
    encoding = "utf-16" if utf16 else "utf-8"
    text = (
        f'<?xml version="1.0" encoding="{encoding}"?>\n' + ("<!-- <a> -->" if comment else "") + doctype + "\n" + body
    )
    path = tmp_path / "hostile.xml"
    path.write_bytes(text.encode(encoding))
    return path


LAUGHS = (
    '<!DOCTYPE r [<!ENTITY lol0 "lol">'
    + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
    + '<!ENTITY boom "&lol9;">]>'
)
XXE = '<!DOCTYPE r [<!ENTITY boom SYSTEM "file:///etc/passwd">]>'


@pytest.mark.parametrize("doctype", [LAUGHS, XXE], ids=["billion-laughs", "xxe"])
@pytest.mark.parametrize("variant", ["plain", "comment-first", "utf-16", "comment-first-utf-16"])
def test_any_dtd_is_refused_by_the_parser(doctype: str, variant: str, tmp_path: Path) -> None:
    path = _hostile(tmp_path, doctype, comment="comment" in variant, utf16="utf-16" in variant)
    result = parse_xml(path, roots=[BOX_ROOT])
    assert result.hostile and result.records == 0 and not result.findings and "DTD" in (result.error or "")


@pytest.mark.parametrize("variant", ["comment-first", "utf-16"])
def test_positive_control_the_previous_byte_scan_let_these_through(variant: str, tmp_path: Path) -> None:
    path = _hostile(tmp_path, XXE, comment=variant == "comment-first", utf16=variant == "utf-16")
    assert not previous(path, roots=[BOX_ROOT]).hostile  # the bypass the parser-level refusal closes
