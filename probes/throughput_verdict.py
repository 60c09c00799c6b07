"""matmul-throughput's verdict on measured TFLOP/s: a pure function, tested on recorded timings."""

from __future__ import annotations

from pydantic import BaseModel

JUDGED = ("fp16", "bf16")  # fp32 and tf32 are reported, not judged against the bf16 ceiling


class Measurement(BaseModel):
    dtype: str
    shape: tuple[int, int, int]
    median_s: float

    @property
    def tflops(self) -> float:
        m, n, k = self.shape
        return 2.0 * m * n * k / self.median_s / 1e12


def ceiling(measurements: list[Measurement]) -> float:
    """The measured bf16 ceiling: the best bf16 TFLOP/s of the run."""
    return max((x.tflops for x in measurements if x.dtype == "bf16"), default=0.0)


def violations(x: Measurement, measurements: list[Measurement], fraction: float) -> list[str]:
    """Findings on an fp16/bf16 measurement: slower than fp32 at its shape, or under fraction x ceiling."""
    if x.dtype not in JUDGED:
        return []
    found = []
    top = ceiling(measurements)
    fp32 = [y for y in measurements if y.dtype == "fp32" and y.shape == x.shape]
    if fp32 and x.tflops < fp32[0].tflops:
        found.append(
            f"{x.dtype} runs slower than fp32 at {x.shape}: {x.tflops:.1f} < {fp32[0].tflops:.1f} TFLOP/s"
        )
    if x.tflops < fraction * top:
        found.append(
            f"{x.dtype} at {x.shape} reaches {x.tflops:.1f} TFLOP/s, under {fraction:g} of the "
            f"measured bf16 ceiling {top:.1f} TFLOP/s"
        )
    return found
