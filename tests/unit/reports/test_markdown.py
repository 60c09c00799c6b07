"""The sweep's Markdown summary: signatures (which contain `|`) stay inside their table cell."""

from __future__ import annotations

from datetime import UTC, datetime

from markdown_it import MarkdownIt

from cuprobe.service.models import Finding, Outcome, Tool
from cuprobe.service.models.sweep import Sweep, SweepCase
from cuprobe.service.reports.markdown import markdown
from cuprobe.service.sweep.diff import diff

# A signature as an H200 sweep of narrow-matmul under initcheck stored it.
SIGNATURE = "initcheck|uninitialized-global-read|tiled_matmul|kernels/narrow_matmul.cu:23|global-read-4"


def _sweep() -> Sweep:
    finding = Finding(signature=SIGNATURE, tool=Tool.INITCHECK, kind="uninitialized-global-read", message="m", count=62)
    cases = [
        SweepCase(
            key=f"narrow-matmul/initcheck/unguarded-n{n}",
            entry="narrow-matmul",
            probe="narrow-matmul",
            tool=Tool.INITCHECK,
            process=0,
            batched=True,
            outcome=Outcome.FINDINGS,
            findings=[finding.model_copy(update={"seen": "1/1"})],
        )
        for n in (1, 2)
    ]
    return Sweep(id="995445271be3", definition="bench48", started_at=datetime.now(UTC), cases=cases)


def _tables(text: str) -> list[list[list[str]]]:
    """Every table as rows of cell texts, the way a Markdown renderer (GitHub's table extension) reads them."""
    tables: list[list[list[str]]] = []
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    for i, token in enumerate(tokens):
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            tables[-1].append([])
        elif token.type in ("th_open", "td_open"):
            tables[-1][-1].append(tokens[i + 1].content)
    return tables


def test_signatures_with_pipes_stay_in_their_cell() -> None:
    sweep = _sweep()
    *_, findings = _tables(markdown(sweep, diff(sweep, None)))
    assert findings[0] == ["case", "signature", "records", "seen", "confirmation", "evidence"]
    assert all(len(row) == 6 for row in findings), findings
    assert [row[1] for row in findings[1:]] == [f"`{SIGNATURE}`"] * 2  # the renderer unescapes \| back to |
    assert [row[2:4] for row in findings[1:]] == [["62", "1/1"]] * 2
