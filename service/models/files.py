"""Reading a pydantic model from a TOML file (suites, baselines, sweep definitions), errors naming file and field."""

from __future__ import annotations

import tomllib
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from cuprobe.service.models.problems import describe

M = TypeVar("M", bound=BaseModel)


def parse_toml(
    text: str, source: str, model: type[M], error: type[Exception], extra: dict[str, Any] | None = None
) -> M:
    """`model` from TOML `text` (plus `extra` keys); `error` says `source`, and the bad TOML or every bad field."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{source} is not valid TOML: {exc}") from exc
    try:
        return model.model_validate({**raw, **(extra or {})})
    except ValidationError as exc:
        raise error(f"{source}: {describe(exc, partial(_named, raw))}") from exc


def _named(raw: dict[str, Any], loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """An error's place with an array-of-tables index given as the entry's name: `test.0.tool` -> `[[test]] "ops" tool`,
    as the file is read by a person (the index stays where the entry has no name)."""
    if len(loc) >= 2 and isinstance(loc[0], str) and isinstance(loc[1], int):
        table = raw.get(loc[0])
        entry = table[loc[1]] if isinstance(table, list) and loc[1] < len(table) else None
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry["name"]:
            rest = ".".join(str(part) for part in loc[2:])
            return (f'[[{loc[0]}]] "{entry["name"]}"' + (f" {rest}" if rest else ""),)
    return loc


def load_toml(
    path: Path, what: str, model: type[M], error: type[Exception], extra: dict[str, Any] | None = None
) -> M:
    """`model` from the TOML file at `path` (a `what`: suite, baseline, sweep definition); `error` otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        said = f"not UTF-8 text (byte {exc.start}: {exc.reason}); TOML is UTF-8"
        raise error(f"cannot read {what} {path}: {said}") from exc
    return parse_toml(text, f"{what} {path}", model, error, extra)
