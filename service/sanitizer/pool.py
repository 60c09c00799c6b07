"""Parse a file's chunks in this process and in child processes, and merge them back in file order."""

from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from cuprobe import IMPORT_ROOT
from cuprobe.service.sanitizer.chunks import Chunk, ChunkResult, Context, Unsplittable, parse_chunk
from cuprobe.service.sanitizer.findings import FindingGrouper
from cuprobe.service.sanitizer.flagged import AllocationIndex
from cuprobe.service.sanitizer.xmlstream import HostileXML

# Below this the whole parse (about 110 MB per CPU second) takes little longer than a child's start-up (about 0.3 s
# of imports): one process.
PARALLEL_MIN_BYTES = 64 << 20
# A caller whose other threads parse at the same time (a local sweep's K slots) parses a file in child processes
# only when that pays: K parses in one process take turns on its interpreter lock and lose more to the turns
# themselves (on the H200's host 4 at once took 8.4 times one, 8 at once 28 times), so a parse beside K - 1 others
# waits for about 2K - 1 parses' worth, while a child costs about 0.5 s of start-up there on a free core. A parse's
# cost is per record (about 38 us a record there, 20 us here; a record is 0.8 KB with device backtraces, 6 KB with
# host ones), so the line is drawn in records times turns: 0.5 s / 38 us is about 13,000. At K = 2 a child pays from
# about 4,400 records, at K = 4 from 1,900, at K = 16 from 430 (docs/sweep.md, "Parsing beside other slots").
CHILDREN_MIN_RECORD_TURNS = 13_000
# A file whose first SAMPLE_BYTES hold no whole record (huge records, or none) goes by size: from this many bytes.
CHILDREN_MIN_BYTES = 16 << 20
SAMPLE_BYTES = 1 << 20


def child_environment() -> dict[str, str]:
    """The environment of a parser process cuprobe starts: this one's, with cuprobe's package importable."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(IMPORT_ROOT), os.environ.get("PYTHONPATH")])))


def estimated_records(path: Path, size: int) -> float | None:
    """How many records the file holds, from how many end in its first SAMPLE_BYTES; None where none end there."""
    with path.open("rb") as raw:
        sample = raw.read(SAMPLE_BYTES)
    ends = sample.count(b"</record>")
    if not ends:
        return None
    return float(ends) if len(sample) >= size else ends * size / len(sample)


def worth_children(path: Path, size: int, parsers: int) -> bool:
    """Whether a file is better parsed in child processes than here, where `parsers` parses (this one included) may
    run at once in this process."""
    records = estimated_records(path, size)
    if records is None:
        return size >= CHILDREN_MIN_BYTES
    return records * (2 * max(1, parsers) - 1) >= CHILDREN_MIN_RECORD_TURNS


def default_workers() -> int:
    """Processes that parse one file: two where there are two cores (a GPU worker's other cores run sanitizers)."""
    return max(1, min(2, os.cpu_count() or 1))


class WorkerFailed(RuntimeError):
    """A child parser died or answered nonsense: the file is parsed again in this process."""


class ChildParser(Protocol):
    """A child process that parses chunks of one file (ChunkWorker, or one forked: service/sanitizer/forked.py)."""

    def parse(self, chunk: Chunk) -> ChunkResult: ...

    def close(self) -> None: ...


def answer(ctx: Context, chunk: Chunk) -> object:
    """A child's answer to `chunk`: its ChunkResult without the allocations (the parent has them), or the
    HostileXML or Unsplittable it raised."""
    try:
        result = parse_chunk(ctx, chunk)
    except (HostileXML, Unsplittable) as exc:
        return exc
    if result.grouper is not None:
        result.grouper.allocations = []  # no need to send them back per chunk
        result.grouper.index = AllocationIndex(())
    return result


def checked(reply: object) -> ChunkResult:
    """The parent's side of `answer`: the ChunkResult, the child's HostileXML or Unsplittable re-raised, anything
    else a WorkerFailed."""
    if isinstance(reply, (HostileXML, Unsplittable)):
        raise reply
    if not isinstance(reply, ChunkResult):
        raise WorkerFailed(f"chunk parser process answered {type(reply).__name__}")
    return reply


class ChunkWorker:
    """One `python -m cuprobe.service.sanitizer.pool` child: it reads chunks of one file and sends back their groups."""

    def __init__(self, ctx: Context) -> None:
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "cuprobe.service.sanitizer.pool"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=child_environment(),
            )
        except OSError as exc:  # no process to be had (fork refused, interpreter gone): parse here instead
            raise WorkerFailed(f"cannot start a chunk parser process: {exc}") from exc
        try:
            self._send(ctx)
        except OSError as exc:
            self.close()
            raise WorkerFailed(f"chunk parser process ended before its first chunk: {exc}") from exc

    def _send(self, message: object) -> None:
        stdin: IO[bytes] = self._proc.stdin  # type: ignore[assignment]
        pickle.dump(message, stdin, protocol=pickle.HIGHEST_PROTOCOL)
        stdin.flush()

    def parse(self, chunk: Chunk) -> ChunkResult:
        """The child's result for `chunk`; its HostileXML or Unsplittable re-raised here."""
        try:
            self._send(chunk)
            reply = pickle.load(self._proc.stdout)  # type: ignore[arg-type]
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            raise WorkerFailed(f"chunk parser process ended: {exc}") from exc
        return checked(reply)

    def close(self) -> None:
        try:
            self._send(None)
            self._proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait()


@dataclass
class Merged:
    """The file's groups so far, in file order, and whether the record cap cut it short."""

    grouper: FindingGrouper
    records: int = 0  # kept
    truncated: bool = False
    seen: int = 0  # every record, kept or past the cap (the record cap keeps counting)
    tool: Any = None


def merge_in_order(
    ctx: Context,
    chunks: Sequence[Chunk],
    max_records: int,
    workers: int,
    here: bool = True,
    child: Callable[[Context], ChildParser] | None = None,
) -> Merged:
    """Parse `chunks` on `workers` lanes (this process + children), merging each in file order as it completes.

    `here=False`: every lane is a child process, so this process only merges: several parses running in threads of
    one process (a local sweep's K slots) then do not queue for its one interpreter lock. `child` gives each child
    lane its process (a ChunkWorker by default; service/sanitizer/forked.py forks one instead)."""
    todo: queue.SimpleQueue[Chunk] = queue.SimpleQueue()
    for chunk in chunks:
        todo.put(chunk)
    done: dict[int, ChunkResult | BaseException] = {}
    ready = threading.Condition()
    stop = threading.Event()

    def lane(parse: Callable[[Chunk], ChunkResult]) -> None:
        while not stop.is_set():
            try:
                chunk = todo.get_nowait()
            except queue.Empty:
                return
            try:
                outcome: ChunkResult | BaseException = parse(chunk)
            except Exception as exc:  # handed to the merging thread, which decides in file order
                outcome = exc
            with ready:
                done[chunk.index] = outcome
                ready.notify()

    children: list[ChildParser] = []
    threads = [threading.Thread(target=lane, args=(lambda c: parse_chunk(ctx, c),), daemon=True)] if here else []
    merged = Merged(FindingGrouper(ctx.roots, ctx.allocations, ctx.single_case, ctx.sanitizer_version, ctx.filtered))
    try:
        for _ in range(min(max(1, workers), len(chunks)) - len(threads)):
            children.append((child or ChunkWorker)(ctx))
            threads.append(threading.Thread(target=lane, args=(children[-1].parse,), daemon=True))
        for thread in threads:
            thread.start()
        for chunk in chunks:
            with ready:
                ready.wait_for(lambda index=chunk.index: index in done)  # type: ignore[misc]
                outcome = done.pop(chunk.index)
            if isinstance(outcome, BaseException):
                raise outcome
            assert outcome.grouper is not None
            merged.grouper.launches.absorb(outcome.grouper.launches)  # every launch counts, past the cap too
            merged.seen += outcome.seen
            merged.tool = merged.tool or outcome.tool
            if merged.truncated:  # past the cap: counted, and the memory it read flagged for kept findings
                merged.grouper.absorb_flagged(outcome.grouper)
                merged.grouper.absorb(outcome.grouper, controls_only=True)  # the confirmer's control always counts
                continue
            left = max_records - merged.records
            if outcome.records > left:  # the cap falls inside this chunk: keep its first `left` records only
                outcome = parse_chunk(ctx, chunk, limit=left)
                merged.truncated = True
            assert outcome.grouper is not None
            merged.grouper.absorb(outcome.grouper)
            merged.records += outcome.records
            if outcome.overflow is not None:
                merged.grouper.absorb_flagged(outcome.overflow)
                merged.grouper.absorb(outcome.overflow, controls_only=True)
    finally:
        stop.set()
        for thread in threads:
            if thread.ident is not None:  # started
                thread.join()
        for worker in children:
            worker.close()
    return merged


def main() -> None:
    """The child's loop: a Context, then chunks until None; each answered with its ChunkResult or its error."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    ctx: Context = pickle.load(stdin)
    while (chunk := pickle.load(stdin)) is not None:
        pickle.dump(answer(ctx, chunk), stdout, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.flush()


if __name__ == "__main__":
    main()
