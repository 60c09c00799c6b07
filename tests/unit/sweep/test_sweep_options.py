"""Sanitizer options on sweep entries: checked per tool, carried into every process's request."""

from __future__ import annotations

import pytest

from cuprobe.service.sweep.definition import DefinitionError, parse_definition
from cuprobe.service.sweep.execute import requests_of
from cuprobe.service.sweep.plan import plan

SWEEP = """
name = "opts"
[[entry]]
probe = "planted"
tool = {tools}
options = {{ leak_check = "full", padding = 64 }}
"""


def test_options_reach_every_request_of_the_entry() -> None:
    definition = parse_definition(SWEEP.format(tools='["memcheck"]'))
    requests = [request for _, request in requests_of(plan(definition))]
    assert requests and all(r.options.key() == "leak-check=full,padding=64" for r in requests)


def test_an_option_for_another_tool_of_the_entry_is_refused() -> None:
    with pytest.raises(DefinitionError, match=r"--leak-check is a memcheck option.*not one for racecheck"):
        parse_definition(SWEEP.format(tools='["memcheck", "racecheck"]'))


def test_an_nvtx_include_filter_under_initchecks_confirmation_is_refused_before_the_sweep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = 'name = "n"\n[[entry]]\nprobe = "uninit-read"\ntool = "initcheck"\ngrid = { n = [1024, 2048] }\n'
    text += 'options = { nvtx_include = ["forward"] }\n'
    with pytest.raises(DefinitionError, match=r"entry uninit-read \(initcheck\): options: nvtx_include would leave"):
        plan(parse_definition(text))
    monkeypatch.setenv("CUPROBE_CONFIRM", "0")  # without the confirmation there is no control to leave unchecked
    assert len(plan(parse_definition(text))) == 2
