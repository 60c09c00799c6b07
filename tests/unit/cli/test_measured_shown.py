"""`cuprobe run bf16-matmul` shows the class it measured, with its evidence, without --json."""

from __future__ import annotations

import io

from rich.console import Console
from typer.testing import CliRunner

from cuprobe.service.cli.main import app
from cuprobe.service.cli.render import print_result
from cuprobe.service.models import RunResult

cli = CliRunner()


def test_the_measured_class_is_shown_under_its_case() -> None:
    done = cli.invoke(app, ["run", "bf16-matmul", "-p", "backends=torch-cpu", "-p", "timing=false", "--json"])
    assert done.exit_code == 0, done.stdout + done.stderr
    result = RunResult.model_validate_json(done.stdout)
    observed = result.cases[0].observations
    out = io.StringIO()
    print_result(result, Console(file=out, width=200))
    shown = out.getvalue()
    assert f"class {observed['class']} (evidence {observed['evidence']}; {observed['reasons'][0]}" in shown
