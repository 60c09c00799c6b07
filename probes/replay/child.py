"""One replay process (`python -m cuprobe.probes.replay.child SPEC OUT_DIR`): seed, hook, run the program, report."""

from __future__ import annotations

import importlib
import json
import os
import random
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any

import torch

from cuprobe.probes.replay import autotune as replay_autotune
from cuprobe.probes.replay import batch as replay_batch
from cuprobe.probes.replay import tape as replay_tape
from cuprobe.probes.replay import triton as replay_triton
from cuprobe.probes.replay.tape import Tape

REPORT_NAME, CAPTURE_NAME = "report.json", "capture.pt"


class BadTarget(ValueError):
    """The entry point or script cannot be found or is not callable."""


def seed_everything(seed: int) -> None:
    """The same seeds in every process: Python, NumPy (when installed) and torch (CPU and CUDA)."""
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:  # numpy is optional for the user's program
        pass
    torch.manual_seed(seed)


def resolve_entry(entry: str) -> Any:
    """`package.module:function` as a callable; BadTarget names what is missing."""
    module_name, _, attr = entry.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise BadTarget(f"entry point {entry}: module {module_name!r} not found ({exc})") from exc
    target = getattr(module, attr, None)
    if not callable(target):
        raise BadTarget(f"entry point {entry}: module {module_name!r} has no callable {attr!r}")
    return target


def run_target(spec: dict[str, Any]) -> None:
    """Run the user's program (entry point, script with arguments, or the built-in example) once."""
    if spec.get("entry"):
        resolve_entry(spec["entry"])()
    elif spec.get("script"):
        path, *args = spec["script"]
        if not Path(path).is_file():
            raise BadTarget(f"script {path!r} does not exist")
        sys.argv = [path, *args]
        sys.path.insert(0, str(Path(path).resolve().parent))
        runpy.run_path(path, run_name="__main__")
    else:
        from cuprobe.probes.replay.example import train

        train(spec["device"], spec["example_steps"], spec["example_plant"])


def host_settings() -> dict[str, Any]:
    """What, besides the program and its seeds, decides a CPU result's bits: the thread counts (they split sums
    into chunks), the CPUs this process may run on, and the SIMD level ATen's kernels were chosen for. Replay
    compares them across processes when their results part."""
    try:
        cpus: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count()
    return {
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "cpus": cpus,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }


def main(argv: list[str]) -> int:
    spec, out = json.loads(argv[0]), Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    seed_everything(spec["seed"])
    if spec.get("pinned_threads"):  # before any parallel work: the inter-op pool can be sized only once
        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    if spec["deterministic_algorithms"]:
        torch.use_deterministic_algorithms(True)
    capture = spec.get("capture_index")
    tape = Tape(capture, out / CAPTURE_NAME if capture is not None else None,
                output_grads=spec["output_grads"])
    replay_tape.ACTIVE = tape
    replay_autotune.watch()
    tape.install()
    error = None
    try:
        run_target(spec)
    except BadTarget as exc:
        error = str(exc)
    except SystemExit as exc:
        if exc.code not in (0, None):
            error = f"the program exited with status {exc.code}"
    except BaseException as exc:  # the user's program raised: reported, never read as clean
        frames = traceback.format_exception(exc, limit=-8)
        error = f"the program raised {type(exc).__name__}: {exc}\n" + "".join(frames)[-4000:]
    finally:
        tape.remove()
    try:
        tail = tape.finish()
    except Exception as exc:  # e.g. the device is unusable after the program's own failure
        tail = 0
        error = error or f"the digests of the last step could not be taken: {type(exc).__name__}: {exc}"
    report = {
        "pid": os.getpid(),
        "error": error,
        "host": host_settings(),  # after the program: a thread count it set is the one its last steps ran with
        "steps": tape.boundaries,
        "tail_records": tail,
        "records": tape.records,
        "autotune": replay_autotune.autotune_choices(),
        "digest_paths": dict(replay_batch.PATHS),  # batches per path: the Triton kernel or the staging buffer
        "triton_failed": replay_triton.FAILED[0] if replay_triton.FAILED else None,
    }
    (out / REPORT_NAME).write_text(json.dumps(report))
    return 0 if error is None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
