"""docs/gate.md's GitHub Actions workflow: valid YAML, a GPU runner, and every cuprobe command parses with the CLI."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from tests.unit.test_compose import parse

DOC = Path(__file__).resolve().parents[3] / "docs" / "gate.md"


def workflow() -> dict:  # type: ignore[type-arg]
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S) if "jobs:" in b]
    loaded = yaml.safe_load(block)
    assert isinstance(loaded, dict)
    return loaded


def cuprobe_commands() -> list[list[str]]:
    commands = []
    for job in workflow()["jobs"].values():
        for step in job["steps"]:
            for line in step.get("run", "").replace("\\\n", " ").splitlines():
                argv = shlex.split(line)
                if argv and Path(argv[0]).name == "cuprobe":
                    commands.append(argv[1:])
    return commands


def test_workflow_runs_the_gate_on_a_self_hosted_gpu_runner() -> None:
    (job,) = workflow()["jobs"].values()
    assert {"self-hosted", "gpu"} <= set(job["runs-on"])
    uploads = [s for s in job["steps"] if s.get("uses", "").startswith("github/codeql-action/upload-sarif")]
    (gate,) = [argv for argv in cuprobe_commands() if argv[0] == "gate"]
    assert uploads and uploads[0]["with"]["sarif_file"] == gate[gate.index("--sarif") + 1]
    assert gate[gate.index("--summary") + 1] == "$GITHUB_STEP_SUMMARY"


def test_every_cuprobe_command_line_parses() -> None:
    commands = cuprobe_commands()
    assert [parse(argv) for argv in commands] == ["doctor", "gate"]


def test_the_doc_commands_in_prose_parse_too() -> None:
    for line in re.findall(r"`(cuprobe gate [^`]*)`", DOC.read_text()):
        if "[" not in line:
            parse(shlex.split(line)[1:])
