"""A sweep's [[test]] entries: the repository checked out at its branch's head and built, and each discovered test
as one sanitized process (the command probe), keyed TEST-ENTRY/TOOL/TEST."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from cuprobe.service.config import Settings
from cuprobe.service.models.bisect import SweepSource
from cuprobe.service.owntests.discover import SANITIZER_MARGIN_S, DiscoveryError, command_params, discover
from cuprobe.service.probing.admission import BadRequest, admit
from cuprobe.service.sweep.checkout import (
    SourceError,
    add_worktree,
    build,
    commit_of,
    git,
    head,
    mirror,
    remove_worktree,
)
from cuprobe.service.sweep.definition import DefinitionError, SweepDefinition
from cuprobe.service.sweep.plan import PlannedCase, Process

OWN_TEST_REASON = "a test of the team's own: one process per test"


@dataclass(frozen=True)
class Checkout:
    """The built checkout a sweep's tests run in: the commit it holds, the mirror it came from, where it is."""

    source: SweepSource
    mirror: Path
    path: Path


def sweep_tree(settings: Settings, definition: str) -> Path:
    """Where a definition's sweeps and their bisects check the repository out: one path every night, so that the
    paths in a finding's signature (a source file outside every source root) are the same each night and in each
    bisect step. One sweep of a definition runs at a time (a scheduled one holds its definition's lock)."""
    return settings.repos / "worktrees" / definition


def check_out(definition: SweepDefinition, settings: Settings, *, resumed: bool = False) -> Checkout:
    """The head of the definition's branch, checked out for this sweep and built; SourceError when it cannot be.
    `resumed`: the checkout the sweep made before its process ended is kept at its commit, so its jobs match."""
    repo = definition.repo
    assert repo is not None  # the definition refuses [[test]] without [repo]
    mirrored = mirror(settings.repos, repo.url)
    path = sweep_tree(settings, definition.name)
    if resumed and (path / ".git").exists():
        commit = git("rev-parse", "HEAD", cwd=path).strip()
    else:
        commit = head(mirrored, repo.branch)
        add_worktree(mirrored, path, commit)
        if why := build(path, repo.build, repo.build_timeout_s):
            remove_worktree(mirrored, path)
            raise SourceError(f"{repo.url} at {commit[:12]} ({repo.branch}): {why}")
    return Checkout(SweepSource(url=repo.url, branch=repo.branch, commit=commit_of(mirrored, commit)), mirrored, path)


def test_processes(definition: SweepDefinition, checkout: Path, start: int) -> list[Process]:
    """One process per discovered test of each [[test]] entry, numbered from `start`; DefinitionError names the entry
    whose tests could not be listed."""
    out: list[Process] = []
    for test in definition.test:
        try:
            found = discover(test, str(checkout))
        except DiscoveryError as exc:
            raise DefinitionError(str(exc)) from exc
        repeats = test.repeats if "repeats" in test.model_fields_set else definition.repeats
        setup = f"options {test.options.checking_key()}" if test.options.checking_key() else ""
        env = json.dumps(test.env, sort_keys=True) if test.env else ""
        setup = "; ".join(part for part in (setup, f"env {env}" if env else "") if part)
        for command in found:
            params = command_params(test, command)
            try:
                admit("command", test.tool, params, test.options)
            except BadRequest as exc:
                raise DefinitionError(f"[[test]] {test.name} ({command.case}): {exc.message}") from exc
            case = PlannedCase(
                key=f"{test.name}/{test.tool}/{command.case}",
                entry=test.name,
                probe="command",
                tool=test.tool,
                point={"test": command.case},
                control=test.control,
                setup=setup,
            )
            out.append(
                Process(
                    index=start + len(out),
                    probe="command",
                    tool=test.tool,
                    params=params,
                    cases=[case],
                    batched=False,
                    reason=OWN_TEST_REASON,
                    repeats=repeats,
                    timeout_s=test.timeout_s + SANITIZER_MARGIN_S,
                    options=test.options,
                )
            )
    return out
