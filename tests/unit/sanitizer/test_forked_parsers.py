"""Chunk parser children forked from one server (service/sanitizer/forked.py): the same findings as a parse here,
nothing of the parse in the calling process, no child left running, and a started child where none can be forked."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import cuprobe.service.sanitizer.forked as forked
import cuprobe.service.sanitizer.pool as pool
from cuprobe.service.sanitizer.chunks import Context
from cuprobe.service.sanitizer.parse import ParseResult, parse_xml
from tests.conftest import BOX_ROOT, CAPTURES, xml_bytes
from tests.unit.sanitizer.test_parse_split import _allocations, _not_here, view

NAME = "2026.4.0.0/probe_narrow-matmul_initcheck"
KW: dict[str, Any] = {"roots": [BOX_ROOT], "allocations": _allocations(CAPTURES / NAME)}


@pytest.fixture
def sweep_xml(tmp_path: Path) -> Path:
    """The H200's batched narrow-matmul run as a sweep writes it (device backtraces only: 5 MB, 6,624 records)."""
    device = tmp_path / "device.xml"
    device.write_bytes(re.sub(rb"<hostStack>.*?</hostStack>\s*", b"", xml_bytes(CAPTURES / NAME), flags=re.S))
    return device


@pytest.fixture
def here(sweep_xml: Path) -> ParseResult:
    result = parse_xml(sweep_xml, **KW)
    assert result.records == 6624 and result.findings
    return result


@pytest.fixture
def server() -> Iterator[forked.ParserServer]:
    started = forked.start_server()
    assert started is not None
    yield started
    started.close()


class Recorder:
    """The server's child, keeping every child it gave."""

    def __init__(self, server: forked.ParserServer) -> None:
        self.server = server
        self.made: list[pool.ChildParser] = []

    def __call__(self, ctx: Context) -> pool.ChildParser:
        self.made.append(self.server.child(ctx))
        return self.made[-1]


def test_forked_children_parse_the_same_findings_and_end(
    sweep_xml: Path, here: ParseResult, server: forked.ParserServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool, "parse_chunk", _not_here)  # nothing parsed in this process
    children = Recorder(server)
    for _ in range(2):  # one child per parse, from the same server
        result = parse_xml(sweep_xml, in_children=4, child=children, **KW)
        assert view(result) == view(here) and result.records == here.records
        assert result.flagged.keys() == here.flagged.keys()
    assert len(children.made) == 2 and all(isinstance(c, forked.ForkedParser) for c in children.made)
    pids = {c.pid for c in children.made if isinstance(c, forked.ForkedParser)}
    assert len(pids) == 2 and os.getpid() not in pids
    assert not any(c.running for c in children.made if isinstance(c, forked.ForkedParser))


def test_the_server_ends_when_closed_and_when_its_sweep_process_ends(server: forked.ParserServer) -> None:
    assert server.running
    server.close()
    assert not server.running and not Path(server.path).exists()
    # A sweep process that dies without closing it: the server sees its stdin close, and ends.
    code = "from service.sanitizer.forked import start_server; import os; s = start_server(); print(s._proc.pid)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    pid = int(done.stdout.strip())
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), "the parser server outlived the process that started it"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # a zombie has ended


def _kill(server: forked.ParserServer) -> None:
    server._proc.kill()
    server._proc.wait()
    assert Path(server.path).exists()  # its socket file is left behind


@pytest.mark.parametrize("end", [forked.ParserServer.close, _kill], ids=["closed", "killed"])
def test_without_a_server_a_parse_is_refused_at_once_and_starts_a_child(
    end: Callable[[forked.ParserServer], None],
    sweep_xml: Path,
    here: ParseResult,
    server: forked.ParserServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Closed, or killed with its socket file left behind: a parse's connect is refused (it does not wait for a
    child that will never come), and the parse starts a child of its own, with the same findings."""
    end(server)
    ctx = Context(sweep_xml, "ComputeSanitizerOutput", **{k: tuple(v) for k, v in KW.items()})
    with pytest.raises(pool.WorkerFailed, match=r"refused|No such file"):
        forked.ForkedParser(server.path, ctx)
    monkeypatch.setattr(pool, "parse_chunk", _not_here)
    children = Recorder(server)
    result = parse_xml(sweep_xml, in_children=4, child=children, **KW)
    assert view(result) == view(here)
    assert children.made and all(isinstance(c, pool.ChunkWorker) for c in children.made)


def test_a_forked_child_that_dies_leaves_the_parse_to_this_process(
    sweep_xml: Path, here: ParseResult, server: forked.ParserServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The positive control of the fallback: a child killed before its first chunk; the same findings, parsed here."""

    def dying(ctx: Context) -> pool.ChildParser:
        child = forked.ForkedParser(server.path, ctx)
        os.kill(child.pid, signal.SIGKILL)
        return child

    result = parse_xml(sweep_xml, in_children=4, child=dying, **KW)
    assert result.error is None and view(result) == view(here)
    monkeypatch.setattr(pool, "parse_chunk", _not_here)
    with pytest.raises(AssertionError, match="parsed in the calling process"):
        parse_xml(sweep_xml, in_children=4, child=dying, **KW)
