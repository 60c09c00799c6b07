"""Torch CUDA tests for tests/gpu/own_code.sh: two clean, one with a planted out-of-bounds write (Triton, unmasked)."""

import torch
import triton
import triton.language as tl


@triton.jit
def _copy_past_the_end(src, dst, n_src: tl.constexpr, n_dst: tl.constexpr) -> None:
    offs = tl.arange(0, n_dst)
    tl.store(dst + offs, tl.load(src + offs % n_src))  # no mask: writes n_dst elements into a shorter buffer


def test_add_is_clean() -> None:
    a = torch.arange(1024, device="cuda", dtype=torch.float32)
    assert torch.equal(a + a, 2 * a)


def test_matmul_is_clean() -> None:
    x = torch.ones(64, 64, device="cuda")
    assert float((x @ x)[0, 0]) == 64.0


def test_planted_oob_write() -> None:
    src = torch.ones(16, device="cuda")
    dst = torch.zeros(16, device="cuda")
    _copy_past_the_end[(1,)](src, dst, 16, 4096)  # 4,080 floats past the end of dst
    torch.cuda.synchronize()
