"""A Triton matmul autotuned over configs that include split-K reductions (GPU only; imports triton)."""
# Triton reads the kernel's annotations (tl.constexpr) at runtime: no postponed annotations, no typed params.
# mypy: disable-error-code="untyped-decorator,no-untyped-def,unused-ignore"

from typing import Any

import torch
import triton
import triton.language as tl

# (BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, num_warps, num_stages): split-K winners sum in a different order.
SHAPES = [
    (64, 64, 32, 1, 4, 3),
    (64, 64, 32, 2, 4, 3),
    (64, 64, 64, 4, 4, 3),
    (128, 64, 32, 1, 4, 3),
    (128, 128, 32, 2, 8, 3),
    (64, 128, 64, 8, 4, 3),
    (32, 64, 64, 8, 4, 4),
    (128, 128, 64, 4, 8, 3),
]
MAX_SPLIT_K = max(s[3] for s in SHAPES)


@triton.jit
def _splitk_kernel(
    a_ptr,
    b_ptr,
    p_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_ps,
    stride_pm,
    stride_pn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr,
):
    pid_m, pid_n, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k_per = tl.cdiv(K, SPLIT_K)
    k_lo = pid_k * k_per
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, k_per, BLOCK_K):
        rk = k_lo + k0 + tl.arange(0, BLOCK_K)
        kmask = (rk < K) & (rk < k_lo + k_per)
        a = tl.load(
            a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
            mask=(rm[:, None] < M) & kmask[None, :],
            other=0.0,
        )
        b = tl.load(
            b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
            mask=kmask[:, None] & (rn[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b)
    tl.store(
        p_ptr + pid_k * stride_ps + rm[:, None] * stride_pm + rn[None, :] * stride_pn,
        acc,
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def _autotuned(cache_results: bool, prune: Any = None) -> Any:
    configs = [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "SPLIT_K": sk}, num_warps=w, num_stages=s)
        for bm, bn, bk, sk, w, s in SHAPES
    ]
    options: dict[str, Any] = {"configs": configs, "key": ["M", "N", "K"], "reset_to_zero": ["p_ptr"]}
    if prune is not None:
        options["prune_configs_by"] = {"early_config_prune": prune}
    try:
        return triton.autotune(**options, cache_results=cache_results)(_splitk_kernel)
    except TypeError:  # triton < 3.2 has no cache_results; TRITON_CACHE_AUTOTUNING is then ignored too
        return triton.autotune(**options)(_splitk_kernel)


def splitk_matmul(shape: list[int], seed: int, cache_results: bool, prune: Any = None) -> tuple[Any, dict[str, Any]]:
    """fp16 [M,K] @ [K,N] with fp32 partial sums; returns the result and the config this process picked.
    `prune(configs, named_args, **kwargs)`, when given, narrows the configs before benchmarking."""
    m, n, k = shape
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=gen).half().cuda()
    b = torch.randn(k, n, generator=gen).half().cuda()
    partial = torch.zeros(MAX_SPLIT_K, m, n, device="cuda", dtype=torch.float32)
    kernel = _autotuned(cache_results, prune)

    def grid(meta: dict[str, int]) -> tuple[int, int, int]:
        return (triton.cdiv(m, meta["BLOCK_M"]), triton.cdiv(n, meta["BLOCK_N"]), meta["SPLIT_K"])

    kernel[grid](
        a,
        b,
        partial,
        m,
        n,
        k,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        partial.stride(0),
        partial.stride(1),
        partial.stride(2),
    )
    best = kernel.best_config
    out = partial[: best.kwargs["SPLIT_K"]].sum(0)  # slices past SPLIT_K hold benchmark leftovers
    choice = {"config": str(best), "benchmarked": hasattr(kernel, "bench_time"), "triton": triton.__version__}
    return out.cpu().numpy(), choice
