"""Record a real caching-allocator trace with the NVTX extension's call log beside it; check the twin on it.

Usage (GPU box): python3 tests/gpu/record_allocator_trace.py OUT_DIR
Writes OUT_DIR/real_trace.json (the snapshot's device_traces, frames dropped) and real_trace.nvtx.log (every
NVTX call kernels/allocator_nvtx.cpp made); exits 1 when probes/allocator_events.py predicts other calls.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from cuprobe.contract import Tool
from cuprobe.probes.allocator import CALL_LOG_ENV, activate, final_context, prepare
from cuprobe.probes.allocator_events import replay


def workload() -> None:
    """Small and large blocks, a freed block reused, a matmul (cuBLAS workspace), then empty_cache."""
    import torch as t

    small = [t.empty(n, device="cuda") for n in (1000, 1000, 37, 4096, 70000)]
    del small[1]
    reused = t.full((1000,), 7.0, device="cuda")
    large = t.zeros(3_000_000, device="cuda")  # 12 MB: the large pool, a 20 MiB segment
    a = t.randn(256, 256, device="cuda")
    b = a @ a
    t.cuda.synchronize()
    del small, reused, large, a, b
    t.cuda.empty_cache()


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    log = out / "real_trace.nvtx.log"
    os.environ[CALL_LOG_ENV] = str(log)
    state = prepare("caching-nvtx", Tool.NONE)
    import torch

    torch.cuda.memory._record_memory_history(stacks="python", max_entries=1_000_000)
    activate(state, torch)
    if state.effective != "caching-nvtx":
        print(f"extension not in use: {state.fallback}")
        return 1
    workload()
    snapshot = torch.cuda.memory._snapshot()
    traces = [[{k: v for k, v in e.items() if k != "frames"} for e in device] for device in snapshot["device_traces"]]
    comment = (
        f"REAL: recorded on the GPU box by tests/gpu/record_allocator_trace.py with torch {torch.__version__} "
        f"on {torch.cuda.get_device_name()}; real_trace.nvtx.log holds the calls the C++ extension made meanwhile"
    )
    (out / "real_trace.json").write_text(json.dumps({"_comment": comment, "device_traces": traces}, indent=1))
    twin = [call.line() for device in traces for call in replay(device)]
    logged = log.read_text().splitlines()
    print(json.dumps(final_context(state, torch), indent=1))
    print(f"events {sum(len(d) for d in traces)}, twin calls {len(twin)}, extension calls {len(logged)}")
    if twin != logged:
        pairs = enumerate(zip(twin, logged, strict=False))
        first = next((i for i, (x, y) in pairs if x != y), min(len(twin), len(logged)))
        print(f"MISMATCH at call {first}: twin {twin[first:first + 3]} extension {logged[first:first + 3]}")
        return 1
    print("twin matches the extension's call log")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
