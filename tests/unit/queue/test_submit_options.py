"""Job submission checks sanitizer options: another tool's option and a suppressions path are refused (422)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.probing.admission import BadRequest
from cuprobe.service.queue.submit import JobSpec, check


def test_an_option_of_another_tool_is_refused_with_422() -> None:
    spec = JobSpec.model_validate({"probe": "planted", "tool": "racecheck", "options": {"padding": 512}})
    with pytest.raises(BadRequest) as refused:
        check(spec, Settings())
    assert refused.value.status == 422 and refused.value.field == "options"
    assert "--padding is a memcheck option" in refused.value.message


def test_suppressions_are_names_in_the_operators_directory(tmp_path: Path) -> None:
    (tmp_path / "known.xml").write_text("<ComputeSanitizerOutput/>")
    settings = Settings(suppressions_dir=tmp_path)
    for bad in ("/etc/passwd", "../known.xml", "missing.xml"):
        spec = JobSpec.model_validate({"probe": "planted", "tool": "memcheck", "options": {"suppressions": bad}})
        with pytest.raises(BadRequest, match=r"suppressions|no such file"):
            check(spec, settings)
    good = JobSpec.model_validate({"probe": "planted", "tool": "memcheck", "options": {"suppressions": "known.xml"}})
    assert check(good, settings).options.suppressions == "known.xml"
    with pytest.raises(BadRequest, match="no suppressions directory"):
        check(good, Settings())
