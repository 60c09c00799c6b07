"""`cuprobe check`'s table read back, and the exit code the table asks for.

`check` runs every probe, replay's built-in example included: a small transformer trained in three CPU processes,
compared bit for bit. On one CI machine one of those processes once came out with different bits in one tensor
(the first AdamW update of the embedding) that two more processes did not reproduce, and 80 processes in a row on
this development machine all agreed. That is torch on that machine, and `check` must then say `findings` and exit 1,
which is what these tests hold it to: replay is the one probe whose findings the check tests accept, and the exit
code must follow the table either way.
"""

from __future__ import annotations

MAY_DIVERGE = {"replay"}


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
    """1 when a row says findings, else 0; a row other than replay's saying findings fails the test."""
    table = rows(stdout)
    assert "replay" in table and "selftest" in table, f"no check table read back:\n{stdout}"
    with_findings = sorted(name for name, cells in table.items() if "findings" in cells)
    assert set(with_findings) <= MAY_DIVERGE, f"findings from {with_findings}:\n{stdout}"
    return 1 if with_findings else 0
