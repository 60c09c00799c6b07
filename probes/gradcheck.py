"""gradcheck: autodiff against central finite differences at h and h/10, with a noise-floor verdict."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cuprobe.contract import CaseResult, Tool
from cuprobe.probes.base import Probe, Recorder

Op = Literal["linear", "attention", "planted-linear"]
Reference = Literal["dtype", "float64"]
DEFAULT_OPS: tuple[Op, ...] = ("linear", "attention", "planted-linear")
DEFAULT_REFERENCES: tuple[Reference, ...] = ("dtype", "float64")
DEFAULT_TOL = {"float32": 1e-2, "float64": 1e-6}
INCONCLUSIVE = "inconclusive: reference at its noise floor"


class GradcheckParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ops: list[Op] = Field(
        default_factory=lambda: list(DEFAULT_OPS),
        min_length=1,
        description="planted-linear has a planted gradient bug (a positive control)",
    )
    dtype: Literal["float32", "float64"] = "float32"
    device: Literal["cpu", "cuda"] = "cpu"
    h: float = Field(1e-3, gt=0, lt=1, description="finite-difference step; h/10 is the second reference")
    references: list[Reference] = Field(
        default_factory=lambda: list(DEFAULT_REFERENCES),
        min_length=1,
        description="precisions the finite differences are computed in",
    )
    tol: float | None = Field(
        None, gt=0, description="relative gap accepted; default 1e-2 (fp32), 1e-6 (fp64)"
    )
    seed: int = Field(0, ge=0)


def reference_verdict(gap: float, noise: float, tol: float) -> str:
    """ok when autodiff agrees; inconclusive when fd(h) and fd(h/10) disagree by more; else finding."""
    if gap <= tol:
        return "ok"
    if noise >= gap:
        return INCONCLUSIVE
    return "finding"


def overall_verdict(verdicts: list[str]) -> str:
    """A finding from any sound reference wins; else ok from any reference; else inconclusive."""
    for verdict in ("finding", "ok"):
        if verdict in verdicts:
            return verdict
    return INCONCLUSIVE


def _ops(torch: Any) -> dict[str, tuple[Callable[..., Any], list[tuple[int, ...]]]]:
    """Each op as (function of its inputs, input shapes)."""

    class PlantedLinear(torch.autograd.Function):  # type: ignore[misc]  # torch is imported lazily
        """x @ w.T + b whose backward forgets a transpose: grad_x = g @ w.T instead of g @ w."""

        @staticmethod
        def forward(ctx: Any, x: Any, w: Any, b: Any) -> Any:
            ctx.save_for_backward(x, w)
            return x @ w.T + b

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            x, w = ctx.saved_tensors
            return g @ w.T, g.T @ x, g.sum(0)

    def attention(q: Any, k: Any, v: Any) -> Any:
        return torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1) @ v

    return {
        "linear": (lambda x, w, b: x @ w.T + b, [(4, 8), (8, 8), (8,)]),
        "attention": (attention, [(1, 4, 8), (1, 4, 8), (1, 4, 8)]),
        "planted-linear": (PlantedLinear.apply, [(4, 8), (8, 8), (8,)]),
    }


def relative_gap(a: Any, b: Any) -> float:
    """max |a - b| / max(max |a|, max |b|) over flattened gradients."""
    return float((a - b).abs().max() / max(a.abs().max(), b.abs().max()).clamp_min(1e-300))


def step_resolved(torch: Any, base: list[Any], dtype: Any, h: float) -> bool:
    """Whether x + h differs from x for every input element in `dtype` (else the differences are void)."""
    return all(bool(((t.to(dtype) + h) != t.to(dtype)).all()) for t in base)


class Gradcheck(Probe[GradcheckParams]):
    name = "gradcheck"
    summary = (
        "Autodiff vs central finite differences at h and h/10; inconclusive at the reference's noise floor"
    )
    Params = GradcheckParams
    tools = (Tool.NONE, Tool.INITCHECK, Tool.MEMCHECK, Tool.RACECHECK, Tool.SYNCCHECK)
    needs_gpu = False

    def gpu_needed(self, params: GradcheckParams) -> bool:
        return params.device == "cuda"

    def run(self, params: GradcheckParams, tool: Tool, recorder: Recorder) -> None:
        from cuprobe.probes.torch_env import import_torch, record_tensors

        torch = import_torch(params.device, tool, recorder)
        tol = params.tol or DEFAULT_TOL[params.dtype]
        alive: list[Any] = []  # no address reused by a later case: findings attribute unambiguously
        for op in params.ops:
            fn, shapes = _ops(torch)[op]
            case = recorder.case(
                op,
                self.expectation(params, tool),
                op=op,
                dtype=params.dtype,
                device=params.device,
                h=params.h,
                tol=tol,
            )
            gen = torch.Generator().manual_seed(params.seed)
            base = [torch.randn(s, generator=gen, dtype=torch.float64).to(params.device) for s in shapes]
            weights = torch.randn(fn(*base).shape, generator=gen, dtype=torch.float64).to(params.device)
            dtype = getattr(torch, params.dtype)
            leaves = [t.to(dtype).requires_grad_() for t in base]
            (fn(*leaves) * weights.to(dtype)).sum().backward()
            record_tensors(recorder, case, **{f"input{i}": t for i, t in enumerate(leaves)})
            alive += leaves
            autodiff = torch.cat([t.grad.double().flatten() for t in leaves])
            self._judge(torch, case, params, tol, fn, base, weights, autodiff)

    @staticmethod
    def _judge(
        torch: Any,
        case: CaseResult,
        params: GradcheckParams,
        tol: float,
        fn: Callable[..., Any],
        base: list[Any],
        weights: Any,
        autodiff: Any,
    ) -> None:
        verdicts = []
        for ref in params.references:
            dtype = getattr(torch, params.dtype if ref == "dtype" else "float64")
            fd_h = finite_differences(torch, fn, base, weights, dtype, params.h)
            fd_h10 = finite_differences(torch, fn, base, weights, dtype, params.h / 10)
            gap = min(relative_gap(autodiff, fd_h), relative_gap(autodiff, fd_h10))
            noise = relative_gap(fd_h, fd_h10)
            resolved = step_resolved(torch, base, dtype, params.h / 10)
            verdict = reference_verdict(gap, noise, tol) if resolved else INCONCLUSIVE
            verdicts.append(verdict)
            case.observations[f"reference_{ref}"] = {
                "gap": gap,
                "noise": noise,
                "step_resolved": resolved,
                "verdict": verdict,
            }
        verdict = overall_verdict(verdicts)
        case.observations["verdict"] = verdict
        planted = case.id.startswith("planted")
        if verdict == "finding" and not planted:
            case.violations.append(
                f"{case.id}: autodiff gradient differs from a sound finite-difference reference "
                f"({case.observations})"
            )
        if planted and verdict != "finding":
            case.violations.append(
                f"{case.id}: the planted gradient bug was not detected (verdict {verdict})"
            )


def finite_differences(
    torch: Any, fn: Callable[..., Any], base: list[Any], weights: Any, dtype: Any, h: float
) -> Any:
    """Central differences of sum(fn(inputs) * weights) w.r.t. every input element, evaluated in `dtype`."""
    inputs = [t.to(dtype) for t in base]
    w = weights.to(dtype)
    grads = []
    with torch.no_grad():
        for t in inputs:
            flat = t.view(-1)
            for i in range(flat.numel()):
                old = flat[i].item()
                flat[i] = old + h
                up = (fn(*inputs) * w).sum().double()
                flat[i] = old - h
                down = (fn(*inputs) * w).sum().double()
                flat[i] = old
                grads.append((up - down) / (2 * h))
    return torch.stack(grads)
