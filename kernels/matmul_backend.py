"""A pycuda matmul backend over kernels/narrow_matmul.cu: float32 and float64 only, no bf16 kernel."""

from __future__ import annotations

from typing import Any

KERNEL_SUFFIX = {"float32": "f32", "float64": "f64"}
TILE = 32


class UnsupportedDtype(TypeError):
    """The backend has no kernel for this dtype and refuses instead of converting silently."""


def check_dtype(dtype: str) -> str:
    """The kernel suffix for `dtype`, or UnsupportedDtype naming the dtypes this backend has."""
    if dtype not in KERNEL_SUFFIX:
        raise UnsupportedDtype(
            f"pycuda backend has no {dtype} matmul kernel (kernels/narrow_matmul.cu has "
            f"{', '.join(KERNEL_SUFFIX)}); refusing rather than converting"
        )
    return KERNEL_SUFFIX[dtype]


def matmul(a: Any, b_t: Any, dtype: str) -> Any:
    """a @ b_t.T on the GPU with the guarded tiled kernel; a and b_t are numpy arrays of `dtype`."""
    suffix = check_dtype(dtype)  # before touching CUDA: the refusal does not depend on the device
    import numpy as np
    import pycuda.driver as cuda

    from cuprobe.kernels.loader import load_module

    m, k = a.shape
    n = b_t.shape[0]
    kernel = load_module("narrow_matmul", ("-lineinfo", f"-DTILE={TILE}")).get_function(
        f"narrow_matmul_guarded_{suffix}"
    )
    out = np.empty((m, n), dtype=a.dtype)
    kernel(cuda.In(np.ascontiguousarray(a)), cuda.In(np.ascontiguousarray(b_t)), cuda.Out(out),
           np.int32(m), np.int32(k), np.int32(n), block=(TILE, TILE, 1),
           grid=(-(-n // TILE), -(-m // TILE)))
    return out
