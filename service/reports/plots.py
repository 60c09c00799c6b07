"""Plots for sweep reports, rendered by matplotlib as inline SVG text."""

from __future__ import annotations

import io

from cuprobe.service.models.sweep import Sweep


def _svg(figure: object) -> str:
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")  # type: ignore[attr-defined]
    plt.close(figure)  # type: ignore[arg-type]
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def findings_by_out_features(sweep: Sweep) -> str | None:
    """Records per case against out_features (n), one line per (tool, variant); None without such cases."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines: dict[str, list[tuple[int, int]]] = {}
    for case in sweep.cases:
        variant = case.point.get("variants", case.point.get("variant"))  # sweeps stored before the rename
        if "n" in case.point and variant is not None and not case.added and case.outcome.ran:
            lines.setdefault(f"{case.tool} {variant}", []).append((int(case.point["n"]), case.records))
    if not lines:
        return None
    figure, axes = plt.subplots(figsize=(8, 3.5))
    for label, points in sorted(lines.items()):
        xs, ys = zip(*sorted(points), strict=True)
        axes.plot(xs, ys, marker=".", label=label)
    axes.set_xlabel("out_features (n)")
    axes.set_ylabel("sanitizer records in the case")
    axes.legend()
    return _svg(figure)


def throughput_by_dtype(sweep: Sweep) -> str | None:
    """Measured TFLOP/s per dtype from matmul-throughput cases; None when the sweep has none."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars: dict[str, float] = {}
    for case in sweep.cases:
        for probe_case, seen in case.observations.items():
            if case.probe == "matmul-throughput" and isinstance(seen.get("tflops"), int | float):
                bars[probe_case] = float(seen["tflops"])
    if not bars:
        return None
    figure, axes = plt.subplots(figsize=(6, 3))
    axes.barh(list(bars), list(bars.values()))
    axes.set_xlabel("TFLOP/s (dtype-MxNxK)")
    return _svg(figure)
