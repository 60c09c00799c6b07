"""Records read from the bytes of a well-formed piece: each record *shape* parsed once by lxml, the values that
vary from record to record taken from the bytes.

A record's shape is its bytes with the text of every <x>, <y>, <z> and <address> leaf removed and its <hostStack>
cut out. Records of one kernel, one source line and one message share a shape and differ only in those values
(thread and block indices, addresses) and in their host stack, which is kept as bytes and parsed only when a
finding needs it (its first record; leaks and API errors, whose signature names the user's call site). A new shape
is parsed with lxml once, the record's fields read from it by the same code as any element (records.py), and each
varying field tied to the leaf it came from; the record it came from is then parsed whole and must give the same
fields, or that shape is read the slow way. Later records of the shape cost a regex split and a dict lookup.

Only a piece libxml2 has parsed whole (well-formed, no DTD) and that holds no comment, processing instruction,
namespace declaration or CDATA section is read this way, and only when its root holds nothing but whole <record>
children; anything else raises NotPlain and the piece is parsed as a tree instead. libxml2's parse leaves out a
host stack whose bytes repeat those of the record before it: parsed there, one whole element, and with no namespace
declared they mean the same anywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lxml import etree

from cuprobe.service.sanitizer.records import Location, RawRecord, Varying, device_stack_of, fill, read_record
from cuprobe.service.sanitizer.xmlstream import HARDENED, HostileXML

SLOT_TAGS = ("x", "y", "z", "address", "errorAddress")
# A slot: the start tag <x>, <y>, <z>, <address> or <errorAddress> and the text after it. split() gives
# [bytes before, tag, value, bytes between, tag, value, ...].
_SLOT = re.compile(rb"(<(?:x|y|z|address|errorAddress)>)([^<]*)")
_RECORD, _RECORD_END = b"<record>", b"</record>"
_HOST, _HOST_END = b"<hostStack>", b"</hostStack>"
_CUT = b"<hostStack/>"
_CUT_MARK = b"\x01"  # where a record's host stack was cut out (not an XML character: no record holds it)
_CDATA = b"<![CDATA["
_DECLARATION = rb"(?:<\?xml[^>]*\?>)?\s*"
_PARSER = etree.XMLParser(**HARDENED)
# HARDENED's safety options for the check, which must see comments and processing instructions, not drop them.
_CHECK_OPTIONS = {key: HARDENED[key] for key in ("resolve_entities", "no_network", "load_dtd", "huge_tree")}
# Distinct shapes kept per process (a few KB each); past it the cache starts again.
MAX_SHAPES = 2048
# A piece whose records rarely repeat a shape is read as a tree: after this many new shapes in one piece, if more
# than half its records so far were new.
_MISSES_BEFORE_GIVING_UP = 64


class NotPlain(ValueError):
    """The piece holds something shapes are not read from: it is parsed as a tree instead (same records)."""


class _Check:
    """A parser target that builds nothing: libxml2 checks the piece is well-formed at C speed, a DTD is refused the
    moment it is reported, and comments, processing instructions and namespace declarations are noted."""

    def __init__(self) -> None:
        self.plain = True

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise HostileXML(f"the XML declares a DTD (<!DOCTYPE {name}>); cuprobe never reads DTDs or entities")

    def comment(self, text: str) -> None:
        self.plain = False

    def pi(self, target: str, data: str | None = None) -> None:
        self.plain = False

    def start_ns(self, prefix: str | None, uri: str) -> None:
        self.plain = False  # a namespace declaration: a repeated host stack could mean something else elsewhere

    def close(self) -> bool:
        return self.plain


def check_piece(body: bytes, head: bytes = b"", tail: bytes = b"") -> bool:
    """Parse `head + body + tail` whole without building anything: XMLSyntaxError if it is not well-formed,
    HostileXML on a DTD; True when it holds no comment, processing instruction, namespace declaration or CDATA
    section."""
    target = _Check()
    parser = etree.XMLParser(target=target, **_CHECK_OPTIONS)
    for part in (head, body, tail):
        if part:
            parser.feed(part)
    plain = parser.close()
    # No "!" at all (one memchr) means no CDATA section; sanitizer XML has none, and few a "!".
    return bool(plain) and (body.find(b"!") < 0 or body.find(_CDATA) < 0)


@dataclass
class Shape:
    """The fixed fields of one record shape, and the slot each varying field comes from."""

    base: RawRecord
    var: Varying  # slot numbers in place of elements
    device: list[Location]

    def record(self, values: list[bytes], host: bytes | None) -> RawRecord:
        """The record of this shape with these slot values (and host stack bytes, if it had one cut out)."""
        b = self.base
        # Positional, in RawRecord's field order: this runs once per record.
        rec = RawRecord(
            b.xml_kind, b.tool, b.kind, b.text, b.level, b.where, self.device, [], None, None, None, b.space, b.access,
            b.size, b.detail, b.hazards, b.peers, b.severity, b.source, host, b.launch_filtered,
        )  # fmt: skip
        return fill(rec, self.var, values.__getitem__)


def _slots_of(leaves: tuple[Any, Any, Any] | None, slot: dict[Any, int]) -> tuple[Any, Any, Any] | None:
    return None if leaves is None else (slot.get(leaves[0]), slot.get(leaves[1]), slot.get(leaves[2]))


def _same(a: RawRecord, b: RawRecord) -> bool:
    """Whether two records agree on every field cuprobe reads (stacks included)."""
    fields = ("xml_kind", "tool", "kind", "text", "level", "where", "thread", "block", "address", "space", "access")
    more = ("size", "detail", "hazards", "peers", "severity", "launch_filtered")
    return all(getattr(a, f) == getattr(b, f) for f in fields + more) and (
        a.host_frames() == b.host_frames() and a.device_frames() == b.device_frames()
    )


def _learn(
    template: bytes, slots: int, cut: bool, values: list[bytes], whole: bytes, host: bytes | None
) -> Shape | None:
    """The Shape of `template` (None: read its records whole), checked against the record it came from."""
    root = _parse_record(template)
    leaves = [e for e in root.iter() if e.tag in SLOT_TAGS]
    if len(leaves) != slots or any(len(e) for e in leaves):
        return None  # a slot tag with children, or written <x/>: not a plain leaf
    stacks = root.findall(".//hostStack")
    if cut and not (len(stacks) == 1 and stacks[0].getparent() is root and _is_empty(stacks[0])):
        return None  # the cut-out stack was not the record's own, or it has another
    base, var = read_record(root)
    slot = {leaf: i for i, leaf in enumerate(leaves)}
    if var.address is not None and var.address not in slot:
        return None
    var = Varying(
        thread=_slots_of(var.thread, slot),
        block=_slots_of(var.block, slot),
        address=slot.get(var.address) if var.address is not None else None,
        other_thread=_slots_of(var.other_thread, slot),
        same_warp_rule=var.same_warp_rule,
    )
    shape = Shape(base, var, device_stack_of(root))
    full = fill(*read_record(_parse_record(whole)))
    return shape if _same(shape.record(values, host), full) else None


def _is_empty(elem: Any) -> bool:
    return len(elem) == 0 and not elem.attrib and not elem.text


_SHAPES: dict[bytes, Shape | None] = {}


class PieceReader:
    """Reads the records of pieces of one file; NotPlain when a piece is not one shapes can be read from."""

    def __init__(self, root: str) -> None:
        name = re.escape(root.encode())
        self.open, self.close = f"<{root}>".encode(), f"</{root}>".encode()
        self._first_head = re.compile(_DECLARATION + rb"<" + name + rb"\s*(/?)>")
        self._tail = re.compile(rb"\s*</" + name + rb"\s*>\s*")

    def records(self, body: bytes, first: bool, closes: bool) -> list[RawRecord]:
        """Every record of a piece of the file, in order: `body` is its bytes, `first` when it starts the file (and
        holds the root's start tag), `closes` when it holds the root's end tag."""
        places, checked = self._places(body, first, closes)
        if not check_piece(checked, b"" if first else self.open, b"" if closes else self.close):
            raise NotPlain("the piece holds a comment, a processing instruction, a namespace or a CDATA section")
        out: list[RawRecord] = []
        misses, shapes = 0, _SHAPES
        for start, end, host, host_end in places:
            if host >= 0:
                stack: bytes | None = body[host:host_end]
                parts = _SLOT.split(body[start:host] + _CUT_MARK + body[host_end:end])
            else:
                stack = None
                parts = _SLOT.split(body[start:end])
            values = parts[2::3]
            odd = b"".join(values)
            if not odd.isascii() or b"&" in odd or b"\r" in odd:  # a character reference, or a line end to normalise
                out.append(self._whole(body[start:end]))
                continue
            del parts[2::3]
            key = b"\0".join(parts)
            try:
                shape = shapes[key]
            except KeyError:
                misses += 1
                if misses > _MISSES_BEFORE_GIVING_UP and 2 * misses > len(out):
                    raise NotPlain("records of this piece rarely share a shape") from None
                if len(shapes) >= MAX_SHAPES:
                    shapes.clear()
                template = b"".join(parts).replace(_CUT_MARK, _CUT)
                shape = shapes[key] = _learn(template, len(values), stack is not None, values, body[start:end], stack)
            out.append(shape.record(values, stack) if shape is not None else self._whole(body[start:end]))
        return out

    def _places(self, body: bytes, first: bool, closes: bool) -> tuple[list[tuple[int, int, int, int]], bytes]:
        """(start, end, host stack start or -1, its end) of every record, and the bytes libxml2 must check: the
        piece with every host stack that repeats the one before it (the same bytes, checked there) left out."""
        pos = 0
        if first:
            head = self._first_head.match(body)
            if head is None:
                raise NotPlain("the piece does not start with the root element")
            pos = head.end()
            if head.group(1):  # <Root/>: no records
                if body[pos:].strip():
                    raise NotPlain("something after the empty root element")
                return [], body
        places: list[tuple[int, int, int, int]] = []
        checked: list[bytes] = []
        find, kept, last_stack = body.find, 0, b""
        host = find(_HOST, pos)  # the next <hostStack> (-1: none left)
        while (start := find(_RECORD, pos)) >= 0:
            if start > pos and not body[pos:start].isspace():
                raise NotPlain("the root holds something other than <record> elements")
            if host >= 0 and (end := find(_RECORD_END, start, host)) < 0:
                # The record holds the next host stack: cut out of its shape, kept as bytes, parsed only if needed.
                host_end = find(_HOST_END, host)
                end = find(_RECORD_END, host_end) if host_end >= 0 else -1
                if end < 0:
                    raise NotPlain("a record without its end tag")
                host_end += len(_HOST_END)
                end += len(_RECORD_END)
                stack = body[host:host_end]
                if stack == last_stack:  # launched from the same place as the record before: checked there
                    checked += (body[kept:host], _CUT)
                    kept = host_end
                else:
                    if stack.find(_RECORD[:-1]) >= 0 or stack.find(_HOST[:-1], 1) >= 0:
                        raise NotPlain("a record or a host stack inside a host stack")
                    last_stack = stack
                places.append((start, end, host, host_end))
                host = find(_HOST, end)
            else:
                end = find(_RECORD_END, start)
                if end < 0:
                    raise NotPlain("a record without its end tag")
                end += len(_RECORD_END)
                places.append((start, end, -1, -1))
            pos = end
        if not (self._tail.fullmatch(body, pos) if closes else body[pos:].isspace() or pos == len(body)):
            raise NotPlain("the piece does not end with the root's end tag")
        checked.append(body[kept:])
        return places, b"".join(checked)

    @staticmethod
    def _whole(record: bytes) -> RawRecord:
        return fill(*read_record(_parse_record(record)))


def _parse_record(record: bytes) -> Any:
    """One record's bytes as an element; NotPlain if they are not one whole record without records inside it (the
    tree and the one-stream parse read a record inside a record as a record of its own)."""
    try:
        elem = etree.fromstring(record, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise NotPlain(f"a record does not parse on its own: {exc}") from exc
    if next(elem.iterdescendants("record"), None) is not None:
        raise NotPlain("a record inside a record")
    return elem
