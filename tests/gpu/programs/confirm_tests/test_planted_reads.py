"""A user's torch tests with the reads cuprobe's confirmation must tell apart under initcheck (each passes bare)."""

import torch
import torch.nn.functional as F


def test_bf16_linear_output_read():
    """cuBLAS's bf16 GEMM writes `out` by a path initcheck does not see on sm_90: reading it is a blind spot."""
    a = torch.randn(64, 128, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(32, 128, device="cuda", dtype=torch.bfloat16)
    out = F.linear(a, w)
    ref = F.linear(a.float(), w.float())
    assert torch.allclose(out.float(), ref, atol=1.0, rtol=0.05)


def test_half_written_empty_summed():
    """Half of a fresh buffer is never written, then the whole buffer is summed: a real defect."""
    x = torch.empty(4096, device="cuda")
    x[:2048] = 1.0
    total = x.sum().item()
    assert isinstance(total, float)


def test_read_before_write():
    """A kernel reads `x` before any kernel wrote it; a later kernel writes it: the read still decides `y`."""
    x = torch.empty(1024, device="cuda")
    y = x * 2
    x.fill_(1.0)
    assert y.shape == x.shape


def test_masked_padding_read():
    """The padding past n is never written; torch.where reads it and masks it out of the result."""
    n, padded = 1024, 1088
    x = torch.empty(padded, device="cuda")
    x[:n] = torch.arange(n, device="cuda", dtype=torch.float32)
    mask = torch.arange(padded, device="cuda") < n
    y = torch.where(mask, x, torch.zeros((), device="cuda"))
    assert y.sum().item() == sum(range(n))


def test_clean():
    assert torch.ones(1024, device="cuda").sum().item() == 1024
