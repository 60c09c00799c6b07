"""The ops the determinism probe replays, and the child process that runs them once (`python -m`)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

# What each op is expected to do across processes, per device.
EXPECTED: dict[tuple[str, str], str] = {
    ("matmul", "cpu"): "deterministic",
    ("matmul", "cuda"): "deterministic",
    ("index_add", "cpu"): "deterministic",  # CPU index_add_ accumulates in a fixed order
    ("index_add", "cuda"): "may vary",  # CUDA index_add_ accumulates floats with atomics, in arrival order
    ("triton-splitk", "cuda"): "deterministic",  # a different winner per process is the defect to find
    ("unseeded", "cpu"): "must vary",  # positive control: a fresh random seed per process
    ("unseeded", "cuda"): "must vary",
}


def digest(array: Any) -> str:
    """sha256 of an array's dtype, shape and bytes."""
    head = f"{array.dtype}:{tuple(array.shape)}:".encode()
    return hashlib.sha256(head + array.tobytes()).hexdigest()


def run_op(op: str, spec: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Run `op` once with fixed inputs; returns the output as numpy and what the op says about its choice."""
    import torch

    device, size = spec["device"], spec["size"]
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator().manual_seed(spec["seed"])
    if op == "matmul":
        a, b = torch.randn(size, size, generator=gen), torch.randn(size, size, generator=gen)
        out = a.to(device) @ b.to(device)
        return out.cpu().numpy(), {}
    if op == "index_add":
        rows = max(size // 4, 1)
        index = torch.randint(0, rows, (size * 64,), generator=gen)
        src = torch.randn(size * 64, size, generator=gen)
        out = torch.zeros(rows, size, device=device).index_add_(0, index.to(device), src.to(device))
        return out.cpu().numpy(), {}
    if op == "unseeded":
        fresh = torch.Generator()
        fresh.seed()  # from OS entropy, unlike torch's fixed default seed
        return torch.randn(size, generator=fresh).numpy(), {}
    if op == "triton-splitk":
        from cuprobe.probes.triton_splitk import splitk_matmul

        return splitk_matmul(spec["triton_shape"], spec["seed"], spec["autotune_cache"] == "shared")
    raise ValueError(f"unknown op {op!r}")


def _set_up_allocator(requested: Any) -> dict[str, Any]:
    """The child's torch allocator as the probe's params ask (set before its first CUDA allocation)."""
    from cuprobe.contract import Tool
    from cuprobe.probes.allocator import activate, prepare

    state = prepare(requested, Tool.NONE)
    import torch

    return activate(state, torch).context() if torch.cuda.is_available() else state.context()


def main(argv: list[str]) -> int:
    """Child: `python -m cuprobe.probes.determinism_ops SPEC_JSON OUT_DIR`; writes OP.npy and choices.json."""
    import numpy as np

    spec, out_dir = json.loads(argv[0]), Path(argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"pid": os.getpid()}
    if spec["device"] == "cuda":
        report["allocator"] = _set_up_allocator(spec.get("allocator"))
    for op in spec["ops"]:
        output, choice = run_op(op, spec)
        np.save(out_dir / f"{op}.npy", output)
        report[op] = {"digest": digest(output), "choice": choice}
    (out_dir / "report.json").write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
