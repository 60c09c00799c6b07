"""cuprobe's own copies of a team's repository: one mirror per URL, a `git worktree` per sweep or bisect, the build.

Everything lives under CUPROBE_REPO_DIR (default DATA_DIR/repos): `mirrors/NAME-HASH.git` (a `git clone --mirror`,
fetched before each use) and `worktrees/ID` (a detached checkout). A GPU worker on another host runs a test in the
same folder, so on a multi-host deployment the folder is shared storage mounted at the same path everywhere.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from cuprobe.service.models.bisect import Commit

GIT_TIMEOUT_S = 1800.0
# How much of a failed build's output a skipped bisect step or a failed sweep keeps.
BUILD_TAIL = 2000


class SourceError(RuntimeError):
    """A repository, branch or commit cuprobe could not get; the message names it and says what git answered."""


def git(*args: str, cwd: Path | None = None, timeout_s: float = GIT_TIMEOUT_S) -> str:
    """Run git; its stdout, or SourceError with what it printed."""
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise SourceError(f"git {' '.join(args)}: {exc}") from exc
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()[-BUILD_TAIL:]
        raise SourceError(f"git {' '.join(args)} exited {done.returncode}: {said or 'no output'}")
    return done.stdout


def mirror(repo_dir: Path, url: str) -> Path:
    """The up-to-date mirror of `url` under `repo_dir`: cloned the first time, fetched every later time."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"))[:40] or "repo"
    path = repo_dir / "mirrors" / f"{name}-{hashlib.sha256(url.encode()).hexdigest()[:12]}.git"
    if (path / "HEAD").exists():
        git("remote", "update", "--prune", cwd=path)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        git("clone", "--mirror", "--quiet", url, str(partial))
        partial.rename(path)  # a clone cut short is never mistaken for a mirror
    return path


def head(mirror_path: Path, branch: str) -> str:
    """The commit `branch` points at in the mirror; SourceError naming the branch when it has none."""
    try:
        return git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}", cwd=mirror_path).strip()
    except SourceError as exc:
        raise SourceError(f"branch {branch!r} is not in the repository ({mirror_path.name})") from exc


def commit_of(mirror_path: Path, rev: str) -> Commit:
    """The commit `rev` names: full hash, author and title."""
    out = git("show", "-s", "--format=%H%x00%an <%ae>%x00%s", rev, "--", cwd=mirror_path)
    full, author, title = out.rstrip("\n").split("\x00", 2)
    return Commit(hash=full, author=author, title=title)


def commits_after(mirror_path: Path, good: str, bad: str) -> list[Commit]:
    """The commits in (good, bad], oldest first, on the paths from good to bad."""
    span = f"{good}..{bad}"
    out = git("log", "--reverse", "--ancestry-path", "--format=%H%x00%an <%ae>%x00%s", span, cwd=mirror_path)
    return [Commit(hash=h, author=a, title=t) for h, a, t in (line.split("\x00", 2) for line in out.splitlines())]


def is_ancestor(mirror_path: Path, older: str, newer: str) -> bool:
    try:
        git("merge-base", "--is-ancestor", older, newer, cwd=mirror_path)
    except SourceError:
        return False
    return True


def add_worktree(mirror_path: Path, path: Path, commit: str) -> Path:
    """A detached checkout of `commit` at `path` (one already there from a run that stopped is replaced)."""
    remove_worktree(mirror_path, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    git("worktree", "add", "--detach", "--force", "--quiet", str(path), commit, cwd=mirror_path)
    return path


def remove_worktree(mirror_path: Path, path: Path) -> None:
    """Remove the checkout at `path` and the mirror's record of it; nothing there is fine."""
    if path.exists():
        try:
            git("worktree", "remove", "--force", "--force", str(path), cwd=mirror_path)
        except SourceError:
            shutil.rmtree(path, ignore_errors=True)
    git("worktree", "prune", cwd=mirror_path)


def build(path: Path, command: str | None, timeout_s: float) -> str | None:
    """Run the build command in the checkout; None when it succeeded, else why not (its output's tail)."""
    if not command:
        return None
    try:
        done = subprocess.run(
            ["sh", "-c", command], cwd=path, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return f"build `{command}` took more than {timeout_s:.0f} s"
    except OSError as exc:
        return f"build `{command}` could not start: {exc}"
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip()[-BUILD_TAIL:]
        return f"build `{command}` exited {done.returncode}: {tail or 'no output'}"
    return None
