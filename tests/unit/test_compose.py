"""docker/compose.yaml and the Dockerfiles: every cuprobe command line parses with the real CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
import yaml

from tests.cli_app import cli_app

try:  # typer >= 0.20 vendors click as typer._click; older typer uses click itself
    from typer._click.exceptions import UsageError
except ImportError:
    from click import UsageError  # type: ignore[assignment]

DOCKER = Path(__file__).resolve().parents[2] / "docker"


def cuprobe_cli() -> typer.core.TyperGroup:
    """Click's view of the real `cuprobe` app."""
    command = typer.main.get_command(cli_app())
    assert isinstance(command, typer.core.TyperGroup)
    return command


def parse(argv: list[str]) -> str:
    """Parse `cuprobe ARGV` with click's parser; returns the subcommand name, raises UsageError if wrong."""
    group = cuprobe_cli()
    ctx = group.make_context("cuprobe", list(argv))
    protected = getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", [])
    name, command, rest = group.resolve_command(ctx, [*protected, *ctx.args])
    assert command is not None and name is not None
    command.make_context(name, rest, parent=ctx)
    return name


def compose_commands() -> dict[str, list[str]]:
    """service -> argv for every compose service that runs a cuprobe image."""
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    found = {}
    for name, service in compose["services"].items():
        if "build" in service:
            assert isinstance(service["command"], list), f"{name}: give the command as a list"
            found[name] = service["command"]
    return found


def dockerfile_cmds() -> dict[str, list[str]]:
    found = {}
    for path in DOCKER.glob("*.Dockerfile"):
        text = path.read_text()
        assert re.search(r'^ENTRYPOINT \["cuprobe"\]$', text, re.M), f"{path.name}: entrypoint is not cuprobe"
        found[path.name] = json.loads(re.search(r"^CMD (.+)$", text, re.M).group(1))  # type: ignore[union-attr]
    return found


def test_compose_runs_api_gpu_and_cpu_workers_and_beat() -> None:
    commands = compose_commands()
    assert sorted(parse(argv) for argv in commands.values()) == ["beat", "serve", "worker", "worker"]
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    assert {"redis", "postgres"} <= set(compose["services"])
    assert "--appendonly" in compose["services"]["redis"]["command"]


@pytest.mark.parametrize("service", sorted(compose_commands()))
def test_compose_command_parses(service: str) -> None:
    parse(compose_commands()[service])


@pytest.mark.parametrize("dockerfile", sorted(dockerfile_cmds()))
def test_dockerfile_default_command_parses(dockerfile: str) -> None:
    parse(dockerfile_cmds()[dockerfile])


@pytest.mark.parametrize(
    "argv", [["worker", "--no-such-flag"], ["serve", "--port", "eighty"], ["nosuchcommand"]]
)
def test_a_wrong_command_line_is_refused(argv: list[str]) -> None:
    with pytest.raises(UsageError):
        parse(argv)


def test_the_compose_sweep_schedule_is_a_beat_entry_and_its_definition_is_in_the_images() -> None:
    from cuprobe.service.config import Settings
    from cuprobe.service.queue.celery_app import TASK_RUN_SWEEP, sweep_schedule

    env = yaml.safe_load((DOCKER / "compose.yaml").read_text())["x-cuprobe-env"]
    default = re.fullmatch(r"\$\{CUPROBE_SWEEP_SCHEDULE:-(.+)\}", env["CUPROBE_SWEEP_SCHEDULE"])
    assert default, env["CUPROBE_SWEEP_SCHEDULE"]
    (entry,) = sweep_schedule(Settings(sweep_schedule=default.group(1))).values()
    assert entry["task"] == TASK_RUN_SWEEP and entry["args"] == ["suites/nightly.toml"]
    for dockerfile in ("api.Dockerfile", "worker.Dockerfile"):
        assert "COPY suites suites" in (DOCKER / dockerfile).read_text()
