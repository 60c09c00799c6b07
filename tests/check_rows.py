"""`cuprobe check`'s table read back, and the exit code the table asks for."""

from __future__ import annotations


def rows(stdout: str) -> dict[str, list[str]]:
    """Each table row's cells, by probe name (the first cell)."""
    found = {}
    for line in stdout.splitlines():
        if line.count("│") >= 4:
            cells = [cell.strip() for cell in line.split("│")[1:-1]]
            if cells and cells[0]:
                found[cells[0]] = cells
    return found


def expected_exit(stdout: str) -> int:
    """0: on a machine without a GPU every CPU probe, replay's built-in example included (its processes agree by
    construction), is clean; a row saying findings fails the test."""
    table = rows(stdout)
    assert "replay" in table and "selftest" in table, f"no check table read back:\n{stdout}"
    with_findings = sorted(name for name, cells in table.items() if "findings" in cells)
    assert not with_findings, f"findings from {with_findings}:\n{stdout}"
    return 0
