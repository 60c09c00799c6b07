"""Read sanitizer XML with bounded memory, refusing hostile XML (any DTD) in the parser itself."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from lxml import etree

PROLOG_LIMIT = 1 << 20
# The options every parse of sanitizer XML uses: no entity expansion, no network, no DTD loading, libxml2's limits.
HARDENED: dict[str, Any] = {
    "resolve_entities": False,
    "no_network": True,
    "load_dtd": False,
    "huge_tree": False,
    "remove_comments": True,
    "remove_pis": True,
    "remove_blank_text": True,
}
_DECLARATION = re.compile(rb"<\?xml\s+version\s*=\s*(['\"])1\.\d+\1(?:\s+encoding\s*=\s*(['\"])([A-Za-z0-9._-]+)\2)?")


class HostileXML(ValueError):
    """The file declares a DTD (billion laughs, XXE): cuprobe never reads one."""


class BrokenXML(ValueError):
    """The file is not well-formed XML (cut short, or not XML at all)."""


@dataclass
class StreamState:
    """What the stream saw: bytes read and whether it stopped at the byte cap."""

    bytes_read: int = 0
    capped: bool = False


@dataclass(frozen=True)
class Prolog:
    """What comes before the first record: the root element, and whether the bytes are plain UTF-8."""

    root: str
    simple_root: bool  # no namespace and no attributes: a chunk can be wrapped in a bare copy of it
    utf8: bool


class _RootSeen(Exception):
    """Raised by the prolog target at the root's start tag: the prolog is over."""


class _PrologTarget:
    """A parser target that refuses a DOCTYPE the moment libxml2 reports one, before any declaration in it."""

    root: tuple[str, bool] | None = None

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise HostileXML(f"the XML declares a DTD (<!DOCTYPE {name}>); cuprobe never reads DTDs or entities")

    def start(self, tag: str, attrib: Any, nsmap: Any = None) -> None:
        self.root = (tag, not attrib and not nsmap and not tag.startswith("{"))
        raise _RootSeen

    def close(self) -> None:
        return None


class _CappedReader:
    """A binary reader that stops at `cap` bytes; the parser then sees the end of input."""

    def __init__(self, raw: IO[bytes], cap: int, state: StreamState) -> None:
        self._raw, self._cap, self._state = raw, cap, state

    def read(self, size: int = -1) -> bytes:
        left = self._cap - self._state.bytes_read
        if left <= 0:
            self._state.capped = bool(self._raw.read(1))
            return b""
        chunk = self._raw.read(min(size if size > 0 else 1 << 16, left))
        self._state.bytes_read += len(chunk)
        return chunk


def open_xml(path: Path) -> IO[bytes]:
    """The file's bytes, gunzipped when it ends in .gz."""
    if path.suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def is_utf8(head: bytes) -> bool:
    """True when the bytes are UTF-8 by the XML rules (no BOM; no declaration, or one naming UTF-8)."""
    if head[:4].find(b"\x00") >= 0 or head[:2] in (b"\xfe\xff", b"\xff\xfe") or head.startswith(b"\xef\xbb\xbf"):
        return False
    if not head.startswith(b"<?xml"):
        return True
    declared = _DECLARATION.match(head)
    if declared is None:
        return False
    encoding = declared.group(3)
    return encoding is None or encoding.lower() in (b"utf-8", b"utf8")


def check_prolog(path: Path) -> Prolog:
    """Parse up to the root's start tag; HostileXML on any DOCTYPE (whatever precedes it, in any encoding)."""
    target = _PrologTarget()
    parser = etree.XMLParser(target=target, **HARDENED)
    head = b""
    with open_xml(path) as raw:
        try:
            while len(head) < PROLOG_LIMIT:
                chunk = raw.read(4096)
                if not chunk:
                    parser.close()
                    break
                head += chunk
                parser.feed(chunk)
        except _RootSeen:
            pass
        except etree.XMLSyntaxError as exc:
            raise BrokenXML(f"sanitizer XML is not well-formed at its start: {exc}") from exc
    if target.root is None:
        raise HostileXML(f"no root element in the first {PROLOG_LIMIT} bytes; refused")
    return Prolog(root=target.root[0], simple_root=target.root[1], utf8=is_utf8(head))


def refuse_dtd(tree: Any) -> None:
    """HostileXML when a parsed document carries a DTD (the prolog check already refused it; this is the document's)."""
    info = tree.docinfo
    if info.doctype or info.internalDTD is not None or info.externalDTD is not None:
        raise HostileXML("the XML declares a DTD; cuprobe never reads DTDs or entities")


def iter_records(path: Path, max_bytes: int, state: StreamState) -> Iterator[Any]:
    """Yield each <record> element in turn, in one process; each is cleared after the consumer is done with it."""
    check_prolog(path)
    with open_xml(path) as raw:
        reader = _CappedReader(raw, max_bytes, state)
        parser = etree.iterparse(reader, events=("end",), tag="record", **HARDENED)
        checked = False
        try:
            for _, elem in parser:
                if not checked:
                    refuse_dtd(elem.getroottree())
                    checked = True
                yield elem
                elem.clear(keep_tail=False)
                while elem.getprevious() is not None:
                    del elem.getparent()[0]
            if parser.root is not None:
                refuse_dtd(parser.root.getroottree())
        except etree.XMLSyntaxError as exc:
            if state.capped or state.bytes_read >= max_bytes:
                state.capped = True
                return
            raise BrokenXML(f"sanitizer XML is not well-formed after {state.bytes_read} bytes: {exc}") from exc
