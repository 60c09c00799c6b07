"""The confirmer's planted cases: one read that must come out blind-spot, one benign, one consequential."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cuprobe.contract import (
    CONFIRM_CONTROL_PREFIX,
    CONTROL_HIDDEN_WRITER,
    CONTROL_READER_PREFIX,
    Expectation,
    Tool,
)
from cuprobe.probes.base import Recorder
from cuprobe.probes.kinds import UNINITIALIZED_GLOBAL_READ

N, K, BLOCK = 256, 192, 128  # elements per buffer; the first K are written where a case writes part
HIDDEN_WRITER = CONTROL_HIDDEN_WRITER  # the run excludes it with --kernel-name-exclude: its writes are unseen
CHECKED_READERS = CONTROL_READER_PREFIX  # prefix of the readers, for a run that also has a --kernel-name filter
# case id -> the confirmation it must get, and what it does
CASES: dict[str, tuple[str, str]] = {
    f"{CONFIRM_CONTROL_PREFIX}blind-spot": ("blind-spot", "an excluded kernel writes src; a checked kernel copies it"),
    f"{CONFIRM_CONTROL_PREFIX}benign": ("benign", "src[K:] never written; read, then masked out of dst"),
    f"{CONFIRM_CONTROL_PREFIX}consequential": ("consequential", "src[K:] never written; copied into dst"),
}


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value


def run_control_cases(tool: Tool, recorder: Recorder) -> None:
    """Run the three planted cases in this process (pycuda), after the probe's own cases."""
    import numpy as np

    from cuprobe.kernels import load_module
    from cuprobe.probes.gpu import cuda_context, device_alloc, device_reader

    nbytes = N * 4
    expectation = (
        Expectation.positive_control(Tool.INITCHECK, UNINITIALIZED_GLOBAL_READ)
        if tool is Tool.INITCHECK
        else Expectation()
    )
    with cuda_context() as cuda:
        module = load_module("confirm_control")
        buffers: list[Any] = []
        for case_id, (verdict, what) in CASES.items():
            case = recorder.case(case_id, expectation, expected_confirmation=verdict, what=what)
            case.observations["expected_confirmation"] = verdict
            src = device_alloc(cuda, nbytes, recorder)
            dst = device_alloc(cuda, nbytes, recorder)
            buffers += [src, dst]
            recorder.allocation(case, "src", int(src), nbytes)
            recorder.allocation(case, "dst", int(dst), nbytes)
            grid = (-(-N // BLOCK), 1)
            if verdict == "blind-spot":
                module.get_function(HIDDEN_WRITER)(src, np.int32(N), block=(BLOCK, 1, 1), grid=grid)
            else:
                cuda.memcpy_htod(src, np.arange(K, dtype=np.float32))
            recorder.poison.checkpoint(case_id, "before the checked reader", src=device_reader(cuda, src, nbytes))
            if verdict == "benign":
                module.get_function("cuprobe_control_masked")(
                    src, dst, np.int32(N), np.int32(K), block=(BLOCK, 1, 1), grid=grid
                )
            else:
                module.get_function("cuprobe_control_copy")(src, dst, np.int32(N), block=(BLOCK, 1, 1), grid=grid)
            cuda.Context.synchronize()
            out = np.empty(N, dtype=np.float32)
            cuda.memcpy_dtoh(out, dst)
            recorder.poison.output(case_id, "dst", _constant(out))
        for buf in buffers:
            buf.free()
