"""What a backend did with a bf16 x bf16 matmul: refused, native, silent_upcast or garbage (pure)."""

from __future__ import annotations

import math
from enum import StrEnum

from pydantic import BaseModel, Field

BF16_UNIT_ROUNDOFF = 2.0**-8


class Bf16Class(StrEnum):
    REFUSED = "refused"
    NATIVE = "native"
    SILENT_UPCAST = "silent_upcast"
    GARBAGE = "garbage"


class Bf16Observation(BaseModel):
    """What one backend's bf16 matmul did; timings are None when not measured (under a sanitizer)."""

    error: str | None = None
    out_dtype: str | None = None
    finite: bool = True
    rel_err: float | None = Field(default=None, description="normwise vs float64; None when not finite")
    k: int = 1
    bit_identical_to_fp32_round: bool = False
    differing_fraction: float = 0.0
    t_bf16_s: float | None = None
    t_fp32_s: float | None = None


class Bf16Verdict(BaseModel):
    cls: Bf16Class
    evidence: str = Field(description="proven, or correlated when the verdict rests on bits alone")
    reasons: list[str]


def error_bound(k: int, factor: float) -> float:
    """Normwise error beyond which a bf16 result is garbage: factor * u * sqrt(k) (bf16 accumulation)."""
    return factor * BF16_UNIT_ROUNDOFF * math.sqrt(max(k, 1))


def classify(obs: Bf16Observation, garbage_factor: float = 4.0, speed_margin: float = 0.8) -> Bf16Verdict:
    """Classify per the bf16-matmul rules; bf16 is 'measurably faster' below speed_margin x the fp32 time."""
    if obs.error is not None:
        return Bf16Verdict(cls=Bf16Class.REFUSED, evidence="proven", reasons=[f"raised: {obs.error}"])
    bound = error_bound(obs.k, garbage_factor)
    if not obs.finite or obs.rel_err is None or not obs.rel_err <= bound:
        why = (f"relative error {obs.rel_err:.3g} > {bound:.3g}" if obs.finite and obs.rel_err is not None
               else "NaN/Inf in the result")
        return Bf16Verdict(cls=Bf16Class.GARBAGE, evidence="proven", reasons=[why])
    if obs.out_dtype != "bfloat16":
        return Bf16Verdict(cls=Bf16Class.SILENT_UPCAST, evidence="proven",
                           reasons=[f"result dtype is {obs.out_dtype}, not bfloat16"])
    bits = (
        "bit-identical to the fp32 matmul rounded to bf16" if obs.bit_identical_to_fp32_round
        else f"differs from the fp32 matmul rounded to bf16 in {obs.differing_fraction:.3g} of elements"
    )
    if obs.t_bf16_s is None or obs.t_fp32_s is None:
        cls = Bf16Class.SILENT_UPCAST if obs.bit_identical_to_fp32_round else Bf16Class.NATIVE
        return Bf16Verdict(cls=cls, evidence="correlated", reasons=[bits, "speed not measured: bits only"])
    ratio = obs.t_bf16_s / obs.t_fp32_s
    faster = ratio < speed_margin
    speed = f"bf16 takes {ratio:.3g}x the fp32 time ({'measurably faster' if faster else 'no faster'})"
    native = faster or not obs.bit_identical_to_fp32_round
    return Bf16Verdict(cls=Bf16Class.NATIVE if native else Bf16Class.SILENT_UPCAST, evidence="proven",
                       reasons=[bits, speed])
