"""narrow-matmul: a tiled matmul whose weight tile reads never-written padding at narrow output widths."""

from __future__ import annotations

import re
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cuprobe.contract import CaseResult, Expectation, Tool
from cuprobe.probes.allocator import FIELD_DESCRIPTION, Allocator
from cuprobe.probes.base import Probe, Recorder
from cuprobe.probes.kinds import UNINITIALIZED_GLOBAL_READ

Variant = Literal["unguarded", "guarded", "torch"]
DType = Literal["float32", "float64"]
VARIANTS: tuple[Variant, ...] = ("unguarded", "guarded", "torch")
KERNEL_VARIANTS: tuple[Variant, ...] = ("unguarded", "guarded")
DEFAULT_N = [1, 2, 3, 4, 8, 31, 32, 33, 63, 64, 65, 127, 128]
SUFFIX = {"float32": "f32", "float64": "f64"}


class NarrowMatmulParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    m: int = Field(32, ge=1, le=8192, description="rows of x (and of y)")
    k: int = Field(32, ge=1, le=8192, description="inner dimension")
    n: list[int] = Field(
        default_factory=lambda: list(DEFAULT_N),
        min_length=1,
        max_length=512,
        description="out_features: one case per n and variant",
    )
    tile: Literal[8, 16, 32] = Field(32, description="tile width (blocks are tile x tile threads)")
    variants: list[Variant] = Field(default_factory=lambda: list(VARIANTS), min_length=1)
    cases: list[str] | None = Field(
        None,
        min_length=1,
        description="run only these cases of the n x variants product (ids like unguarded-n5); default: every one",
    )
    dtype: DType = "float32"
    allocator: Allocator | None = Field(None, description=FIELD_DESCRIPTION)
    seed: int = Field(0, ge=0)

    @field_validator("n")
    @classmethod
    def _n_in_range_and_unique(cls, value: list[int]) -> list[int]:
        if any(not 1 <= n <= 8192 for n in value) or len(set(value)) != len(value):
            raise ValueError(f"n must be distinct integers in 1..8192 (got {value})")
        return value

    @field_validator("variants")
    @classmethod
    def _variants_unique(cls, value: list[Variant]) -> list[Variant]:
        if len(set(value)) != len(value):
            raise ValueError(f"variants must be distinct (got {value})")
        return value

    @model_validator(mode="after")
    def _cases_in_the_product(self) -> NarrowMatmulParams:
        if self.cases is None:
            return self
        product = {case_id(v, n) for v in self.variants for n in self.n}
        if outside := [c for c in self.cases if c not in product]:
            example = case_id(self.variants[0], self.n[0])
            raise ValueError(f"cases must be ids of the n x variants product, like {example} (got {outside[:3]})")
        if len(set(self.cases)) != len(self.cases):
            raise ValueError("cases must be distinct")
        return self

    def selected(self) -> list[tuple[Variant, int]]:
        """The (variant, n) cases these parameters run, in the order the probe runs them: the n x variants product,
        or the part of it `cases` names."""
        chosen = None if self.cases is None else set(self.cases)
        return [(v, n) for v in self.variants for n in self.n if chosen is None or case_id(v, n) in chosen]


def padded(n: int, tile: int) -> int:
    """Rows of the padded weight buffer: n rounded up to a multiple of the tile width."""
    return -(-n // tile) * tile


def part_of_product(variants: Sequence[str], ns: list[int], chosen: set[tuple[str, int]]) -> list[str] | None:
    """The `cases` parameter that runs exactly `chosen` of the variants x n product: their ids in the probe's order,
    or None where they are the whole product."""
    product = [(v, n) for v in variants for n in ns]
    return None if len(chosen) == len(product) else [case_id(v, n) for v, n in product if (v, n) in chosen]


def _cut(params: NarrowMatmulParams, keep: list[tuple[Variant, int]]) -> NarrowMatmulParams:
    """`params` running only the cases `keep`: n and variants cut to theirs, and `cases` naming them where they are
    not the whole of that product."""
    kept_ns, kept_variants = {n for _, n in keep}, {v for v, _ in keep}
    ns = [n for n in params.n if n in kept_ns]
    variants = [v for v in params.variants if v in kept_variants]
    cases = part_of_product(variants, ns, set(keep))
    return params.model_copy(update={"n": ns, "variants": variants, "cases": cases})


def case_id(variant: str, n: int) -> str:
    """A case's id: its variant and n ("unguarded-n5"); _CASE_ID reads it back."""
    return f"{variant}-n{n}"


_CASE_ID = re.compile(rf"(?P<variant>{'|'.join(VARIANTS)})-n(?P<n>\d+)")


def expected_uninit_reads(m: int, k: int, n: int, tile: int, variant: Variant) -> int:
    """initcheck records this case should produce: one per thread per load of a never-written element.

    Only the unguarded kernel loads unwritten memory: the weight rows n..n_pad of the last column
    tile. Each of the ceil(m / tile) blocks in that grid column stages every one of those
    (n_pad - n) rows over all k columns, one element per thread per k-step, so the count is
    (n_pad - n) * k * ceil(m / tile). The guarded kernel bounds those loads, x and y are fully
    written and in range, and torch's operands are exactly [m, k] and [n, k]: zero for those.
    Assumes initcheck reports every such load (no de-duplication by address or pc), as measured:
    24 threads reading 24 unwritten floats gave 24 records.
    """
    if variant != "unguarded":
        return 0
    return (padded(n, tile) - n) * k * -(-m // tile)


def operands(params: NarrowMatmulParams, n: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """x [m, k] and w [n, k] of case n, drawn from (seed, n) alone: a case gets the same inputs whichever other
    cases share its run (a sweep's batch, a confirmation's narrowed or merged re-run)."""
    rng = np.random.default_rng([params.seed, n])
    return rng.standard_normal((params.m, params.k)), rng.standard_normal((n, params.k))


def relative_error(result: np.ndarray[Any, Any], reference: np.ndarray[Any, Any]) -> float:
    """max |result - reference| / max |reference| (normwise; NaN when the result is not finite)."""
    scale = float(np.max(np.abs(reference))) or 1.0
    return float(np.max(np.abs(result.astype(np.float64) - reference))) / scale


def tolerance(dtype: DType, k: int) -> float:
    """A loose bound on a correct dot product's normwise error: 4 * k * unit roundoff."""
    return 4.0 * k * float(np.finfo(dtype).eps)


class NarrowMatmul(Probe[NarrowMatmulParams]):
    name = "narrow-matmul"
    summary = "Tiled matmul reading never-written weight padding at narrow out_features; guarded and torch"
    Params = NarrowMatmulParams
    tools = (Tool.INITCHECK, Tool.MEMCHECK, Tool.RACECHECK, Tool.SYNCCHECK, Tool.NONE)
    beats = True  # short cases: the runner's watchdog may stop and retry a run that stops making progress
    warms = True  # its cases run in its own process: a spare can get ready before its parameters come
    poisonable = True

    def uses_torch(self, params: NarrowMatmulParams) -> bool:
        return any(variant == "torch" for variant, _ in params.selected())

    def narrowed(self, params: NarrowMatmulParams, cases: set[str]) -> NarrowMatmulParams | None:
        """The n values and variants of `cases` ("unguarded-n5"...): the part of their product these parameters
        run, which holds every one of them."""
        found = [_CASE_ID.fullmatch(case) for case in cases]
        if not cases or not all(found):
            return None
        wanted = {(m["variant"], int(m["n"])) for m in found if m}
        selected = params.selected()
        if not wanted <= set(selected):
            return None
        ns, variants = {n for _, n in wanted}, {v for v, _ in wanted}
        return _cut(params, [(v, n) for v, n in selected if v in variants and n in ns])

    def without_torch(self, params: NarrowMatmulParams) -> NarrowMatmulParams | None:
        """The kernel variants' cases only: only the torch variant imports torch."""
        selected = params.selected()
        kernels = [(v, n) for v, n in selected if v in KERNEL_VARIANTS]
        if not kernels or len(kernels) == len(selected):
            return None
        return _cut(params, kernels)

    def merged(self, params: list[NarrowMatmulParams]) -> NarrowMatmulParams | None:
        """The batches' n values and variants together (their whole product: a batch that runs part of its product
        still merges into a set that holds every one of its cases), where the batches differ in nothing else."""
        if not params or len({p.model_dump_json(exclude={"n", "variants", "cases"}) for p in params}) != 1:
            return None
        ns = list(dict.fromkeys(n for p in params for n in p.n))
        variants = list(dict.fromkeys(v for p in params for v in p.variants))
        try:
            return params[0].model_validate({**params[0].model_dump(), "n": ns, "variants": variants, "cases": None})
        except ValidationError:  # more n values than one run takes
            return None

    @staticmethod
    def case_expectation(params: NarrowMatmulParams, tool: Tool, variant: Variant, n: int) -> Expectation:
        """A positive control exactly when initcheck must see the unguarded kernel read padding."""
        if tool is Tool.INITCHECK and expected_uninit_reads(params.m, params.k, n, params.tile, variant):
            return Expectation.positive_control(Tool.INITCHECK, UNINITIALIZED_GLOBAL_READ)
        return Expectation()

    def expectation(self, params: NarrowMatmulParams, tool: Tool) -> Expectation:
        for variant, n in params.selected():
            if not self.case_expectation(params, tool, variant, n).clean:
                return self.case_expectation(params, tool, variant, n)
        return Expectation()

    def run(self, params: NarrowMatmulParams, tool: Tool, recorder: Recorder) -> None:
        selected = params.selected()
        inputs = {n: operands(params, n) for n in dict.fromkeys(n for _, n in selected)}
        kernels = [(v, n) for v, n in selected if v in KERNEL_VARIANTS]
        # Every buffer lives until every case ran: a freed address handed to a later case would make
        # attribution by address ambiguous.
        alive: list[Any] = []
        with ExitStack() as stack:
            if kernels:
                from cuprobe.kernels import load_module
                from cuprobe.probes.gpu import cuda_context

                cuda = stack.enter_context(cuda_context())
                stack.callback(lambda: [buf.free() for buf in alive if hasattr(buf, "free")])
                module = load_module("narrow_matmul", ("-lineinfo", f"-DTILE={params.tile}"))
                for variant, n in kernels:
                    case = self._case(params, tool, variant, n, recorder)
                    y = self._run_kernel(cuda, module, params, variant, inputs[n], recorder, case, alive)
                    recorder.poison.output(case.id, "y", y.copy)
                    self._judge(params, case, y, inputs[n])
            if torch_ns := [n for v, n in selected if v == "torch"]:
                self._run_torch(params, tool, recorder, inputs, torch_ns, alive)

    def _run_torch(
        self,
        params: NarrowMatmulParams,
        tool: Tool,
        recorder: Recorder,
        inputs: dict[int, tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]],
        ns: list[int],
        alive: list[Any],
    ) -> None:
        from cuprobe.probes.torch_env import import_torch, record_tensors, tensor_values

        torch = import_torch("cuda", tool, recorder, params.allocator)
        torch.backends.cuda.matmul.allow_tf32 = False  # exact-dtype cuBLAS, comparable to the kernel
        for n in ns:
            case = self._case(params, tool, "torch", n, recorder)
            x = torch.from_numpy(inputs[n][0].astype(params.dtype)).cuda()
            w = torch.from_numpy(inputs[n][1].astype(params.dtype)).cuda()
            y = x @ w.T
            torch.cuda.synchronize()
            record_tensors(recorder, case, x=x, w=w, y=y)
            recorder.poison.output(case.id, "y", tensor_values(y))
            self._judge(params, case, y.cpu().numpy(), inputs[n])
            alive += [x, w, y]

    def _case(
        self, params: NarrowMatmulParams, tool: Tool, variant: Variant, n: int, recorder: Recorder
    ) -> CaseResult:
        p = params
        case = recorder.case(
            case_id(variant, n),
            self.case_expectation(p, tool, variant, n),
            variant=variant,
            n=n,
            m=p.m,
            k=p.k,
            tile=p.tile,
            dtype=p.dtype,
        )
        case.observations["expected_uninit_reads"] = expected_uninit_reads(p.m, p.k, n, p.tile, variant)
        case.observations["n_pad"] = padded(n, params.tile) if variant != "torch" else n
        return case

    @staticmethod
    def _run_kernel(
        cuda: Any,
        module: Any,
        params: NarrowMatmulParams,
        variant: Variant,
        operands: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]],
        recorder: Recorder,
        case: CaseResult,
        alive: list[Any],
    ) -> np.ndarray[Any, Any]:
        from cuprobe.probes.gpu import device_alloc, device_reader

        x_host, w_host = (a.astype(params.dtype) for a in operands)
        n, item = w_host.shape[0], x_host.itemsize
        n_pad = padded(n, params.tile)
        x = cuda.to_device(x_host)
        w = device_alloc(cuda, n_pad * params.k * item, recorder)
        y = device_alloc(cuda, params.m * n * item, recorder)
        cuda.memcpy_htod(w, w_host)  # rows 0..n only: the padding rows n..n_pad stay unwritten
        recorder.allocation(case, "x", int(x), x_host.nbytes)
        recorder.allocation(case, "w_padded", int(w), n_pad * params.k * item)
        recorder.allocation(case, "y", int(y), params.m * n * item)
        kernel = module.get_function(f"narrow_matmul_{variant}_{SUFFIX[params.dtype]}")
        recorder.poison.checkpoint(
            case.id,
            f"before narrow_matmul_{variant}_{SUFFIX[params.dtype]}",
            x=device_reader(cuda, x, x_host.nbytes),
            w_padded=device_reader(cuda, w, n_pad * params.k * item),
            y=device_reader(cuda, y, params.m * n * item),
        )
        grid = (n_pad // params.tile, -(-params.m // params.tile))
        kernel(
            x,
            w,
            y,
            np.int32(params.m),
            np.int32(params.k),
            np.int32(n),
            block=(params.tile, params.tile, 1),
            grid=grid,
        )
        cuda.Context.synchronize()
        out = np.empty((params.m, n), dtype=params.dtype)
        cuda.memcpy_dtoh(out, y)
        alive += [x, w, y]
        return out

    @staticmethod
    def _judge(
        params: NarrowMatmulParams,
        case: CaseResult,
        y: np.ndarray[Any, Any],
        operands: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]],
    ) -> None:
        x, w = (a.astype(params.dtype).astype(np.float64) for a in operands)
        err = relative_error(y, x @ w.T)
        tol = tolerance(params.dtype, params.k)
        case.observations.update(max_rel_err=err, tolerance=tol)
        if not err <= tol:  # also catches NaN
            case.violations.append(f"result wrong: max relative error {err:.3g} > tolerance {tol:.3g}")
