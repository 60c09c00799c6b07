"""pydantic validation errors said as a person would: `field: 'value' is not one of a, b, c`, no dump, no URL."""

from __future__ import annotations

import difflib
import math
import warnings
from collections.abc import Callable, Collection, Mapping
from typing import Any, get_args

from pydantic import BaseModel, ValidationError


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "top level"


def _choices(expected: str) -> str:
    """pydantic's `'a', 'b' or 'c'` as `a, b, c`."""
    return expected.replace("' or '", "', '").replace("'", "")


def _unknown(name: str, fields: Collection[str]) -> str:
    """`unknown field` with the closest names (difflib) and every valid one."""
    close = difflib.get_close_matches(name, list(fields), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"unknown field{hint} (its fields: {', '.join(fields)})"


def problem(error: Any, fields: Collection[str] | None = None) -> str:
    """One pydantic error dict as `where: what is wrong`; `fields`: the model's, named for a field it does not
    have."""
    where, kind, got = _where(tuple(error.get("loc", ()))), error.get("type", ""), error.get("input")
    ctx = error.get("ctx") or {}
    if kind in ("literal_error", "enum") and "expected" in ctx:
        return f"{where}: {got!r} is not one of {_choices(str(ctx['expected']))}"
    if kind == "extra_forbidden":
        loc = tuple(error.get("loc", ()))
        return f"{where}: " + (_unknown(str(loc[0]), fields) if fields and len(loc) == 1 else "unknown field")
    if kind == "missing":
        return f"{where}: required"
    if kind == "list_type" and isinstance(got, str):  # a list given as text: say the forms a list is written in
        forms = 'JSON ["a", "b"] (on cuprobe\'s command line also -p NAME=a,b)'
        return f"{where}: takes a list, in {forms} (got {got!r})"
    if isinstance(got, float) and not math.isfinite(got):  # NaN compares false with every bound: say what it is
        return f"{where}: takes a finite number (got {got!r})"
    message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    shown = "" if isinstance(got, dict | list) or got is None else f" (got {got!r})"
    return f"{where}: {message}{shown}"


def bool_for_number(model: type[BaseModel], data: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first field of `model` that takes a number but is given true or false in `data`, with 'NAME takes a
    number, not true': pydantic's lax mode would read it as 1 or 0, and a slip should not run as a measurement."""
    for name, value in data.items():
        field = model.model_fields.get(name)
        kind = str(field.annotation) if field is not None else ""
        if isinstance(value, bool) and ("int" in kind or "float" in kind) and "bool" not in kind:
            return name, f"{name} takes a number, not {str(value).lower()}"
    return None


def _number_only(annotation: Any) -> bool:
    """Whether a field's type takes numbers and nothing else (None aside): `int`, `float | None`."""
    kinds = [a for a in (get_args(annotation) or (annotation,)) if a is not type(None)]
    return bool(kinds) and all(kind in (int, float) for kind in kinds)


def text_for_number(model: type[BaseModel], data: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first field of `model` that takes only a number but is given a string in `data` (a JSON request's
    `"timeout_s": "10"`), with 'NAME takes a number, not the string '10'': lax mode would read it as one."""
    for name, value in data.items():
        field = model.model_fields.get(name)
        if isinstance(value, str) and field is not None and _number_only(field.annotation):
            return name, f"{name} takes a number, not the string {value[:40]!r}"
    return None


Place = tuple[int | str, ...]


def describe(
    exc: ValidationError, place: Callable[[Place], Place] | None = None, fields: Collection[str] | None = None
) -> str:
    """Every error of `exc`, `; `-separated; `place` rewrites where each one is (e.g. an index as the entry's name);
    `fields`: the validated model's, listed where a field it does not have was given."""
    errors = exc.errors(include_url=False)
    return "; ".join(problem({**e, "loc": place(tuple(e["loc"]))} if place else e, fields) for e in errors)


class SpellingDeprecated(FutureWarning):
    """A suite or sweep file used a field's old spelling; it still works, and the message names the new one."""


def respell(data: Any, old: str, new: str, where: str) -> Any:
    """`data` (a dict being validated) with key `old` renamed to `new`, warning that `old` is deprecated."""
    if isinstance(data, dict) and old in data:
        if new in data:
            raise ValueError(f"{where}: give `{new}` only (`{old}` is its old spelling)")
        warnings.warn(
            f"{where}: `{old}` is deprecated; write `{new}` (the spelling suites and sweeps share)",
            SpellingDeprecated,
            stacklevel=2,
        )
        data = {new if key == old else key: value for key, value in data.items()}
    return data
