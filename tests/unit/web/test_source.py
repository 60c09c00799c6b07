"""A finding's source lines come only from a file under a known source root, never from a path leading out of one."""

from __future__ import annotations

from pathlib import Path

from cuprobe.service.config import Settings
from cuprobe.service.web.source import excerpt


def test_the_lines_around_the_finding_from_a_configured_root(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "op.cu").write_text("".join(f"line {n}\n" for n in range(1, 21)))
    found = excerpt(Settings(source_roots=[str(tmp_path)]), "src/op.cu", 10)
    assert found is not None and found.line == 10 and found.first == 6
    assert found.lines == [f"line {n}" for n in range(6, 15)]
    start = excerpt(Settings(source_roots=[str(tmp_path)]), "src/op.cu", 1)
    assert start is not None and start.first == 1 and start.lines[0] == "line 1"


def test_nothing_outside_a_root_nor_past_the_file_nor_without_a_line(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("do not show\n")
    (root / "link.cu").symlink_to(secret)
    (root / "short.cu").write_text("one line\n")
    settings = Settings(source_roots=[str(root)])
    assert excerpt(settings, "../secret.txt", 1) is None
    assert excerpt(settings, str(secret), 1) is None  # an absolute path is not under the root either
    assert excerpt(settings, "link.cu", 1) is None  # a symlink pointing out of the root
    assert excerpt(settings, "short.cu", 5) is None
    assert excerpt(settings, "short.cu", None) is None
    assert excerpt(settings, None, 3) is None
