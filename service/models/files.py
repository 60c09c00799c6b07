"""Reading a pydantic model from a TOML file (suites, baselines, sweep definitions), errors naming file and field."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from service.models.problems import describe

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
        raise error(f"{source}: {describe(exc)}") from exc


def load_toml(
    path: Path, what: str, model: type[M], error: type[Exception], extra: dict[str, Any] | None = None
) -> M:
    """`model` from the TOML file at `path` (a `what`: suite, baseline, sweep definition); `error` otherwise."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    return parse_toml(text, f"{what} {path}", model, error, extra)
