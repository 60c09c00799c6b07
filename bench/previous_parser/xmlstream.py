"""Stream <record> elements out of a sanitizer XML file with bounded memory, refusing hostile XML."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from lxml import etree

_PROLOG_LIMIT = 1 << 20
_FIRST_ELEMENT = re.compile(rb"<[A-Za-z_]")
_DECLARATION = re.compile(rb"<!(DOCTYPE|ENTITY|ELEMENT|ATTLIST)", re.IGNORECASE)


class HostileXML(ValueError):
    """The file declares a DTD or entities: cuprobe never expands them (billion laughs, XXE)."""


class BrokenXML(ValueError):
    """The file is not well-formed XML (cut short, or not XML at all)."""


@dataclass
class StreamState:
    """What the stream saw: bytes read and whether it stopped at the byte cap."""

    bytes_read: int = 0
    capped: bool = False


class _CappedReader:
    """A binary reader that stops at `cap` bytes; the parser then sees the end of input."""

    def __init__(self, raw: IO[bytes], cap: int, state: StreamState, prefix: bytes) -> None:
        self._raw, self._cap, self._state, self._prefix = raw, cap, state, prefix

    def read(self, size: int = -1) -> bytes:
        if self._prefix:
            chunk, self._prefix = self._prefix, b""
        else:
            left = self._cap - self._state.bytes_read
            if left <= 0:
                self._state.capped = bool(self._raw.read(1))
                return b""
            chunk = self._raw.read(min(size if size > 0 else 1 << 16, left))
        self._state.bytes_read += len(chunk)
        return chunk


def _open(path: Path) -> IO[bytes]:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def _check_prolog(raw: IO[bytes]) -> bytes:
    """Read up to the first element; refuse any DTD or entity declaration before it. Returns what was read."""
    head = b""
    while len(head) < _PROLOG_LIMIT:
        chunk = raw.read(4096)
        head += chunk
        first = _FIRST_ELEMENT.search(head)
        if first or not chunk:
            prolog = head[: first.start()] if first else head
            if _DECLARATION.search(prolog):
                raise HostileXML("the XML declares a DTD or entities (<!DOCTYPE/<!ENTITY); refused unparsed")
            return head
    raise HostileXML(f"no root element in the first {_PROLOG_LIMIT} bytes; refused")


def iter_records(path: Path, max_bytes: int, state: StreamState) -> Iterator[Any]:
    """Yield each <record> element in turn; each is cleared after the consumer is done with it."""
    with _open(path) as raw:
        prefix = _check_prolog(raw)
        reader = _CappedReader(raw, max_bytes, state, prefix)
        parser = etree.iterparse(
            reader,
            events=("end",),
            tag="record",
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
        )
        try:
            for _, elem in parser:
                yield elem
                elem.clear(keep_tail=False)
                while elem.getprevious() is not None:
                    del elem.getparent()[0]
        except etree.XMLSyntaxError as exc:
            if state.capped or state.bytes_read >= max_bytes:
                state.capped = True
                return
            raise BrokenXML(f"sanitizer XML is not well-formed after {state.bytes_read} bytes: {exc}") from exc
