"""The dashboard's reproduce line carries the whole stored request, and the CLI reads it back to the same request."""

from __future__ import annotations

import shlex

from cuprobe.service.cli.jobs import parse_params
from cuprobe.service.cli.options import parse_options
from cuprobe.service.models import SanitizerOptions
from cuprobe.service.queue.submit import JobSpec
from cuprobe.service.web.render import run_command


def test_every_part_of_a_request_is_in_the_line_and_reads_back_the_same() -> None:
    spec = JobSpec.model_validate({
        "probe": "narrow-matmul",
        "tool": "initcheck",
        "params": {"n": [1, 33], "variants": ["unguarded"]},
        "timeout_s": 90,
        "kernel_filter": ["narrow_matmul_unguarded"],
        "options": {"padding": 512, "track_unused_memory": True, "kernel_name_exclude": ["kns=relu", "kns=gelu"]},
    })
    request = spec.model_dump(mode="json")
    argv = shlex.split(run_command(spec.probe, spec.tool, spec.params, request))
    assert argv[:5] == ["cuprobe", "run", "narrow-matmul", "--tool", "initcheck"]

    def values(flag: str) -> list[str]:
        return [argv[i + 1] for i, arg in enumerate(argv) if arg == flag]

    assert parse_params(values("-p"), None) == spec.params
    assert values("--timeout") == ["90"] and values("--kernel") == ["narrow_matmul_unguarded"]
    options = parse_options(values("-S"))
    assert options == spec.options and options != SanitizerOptions()
