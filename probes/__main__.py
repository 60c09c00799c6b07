"""`python -m cuprobe.probes NAME --params JSON --out FILE [--tool T]`: run one probe, write result.json."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from cuprobe import internal_env
from cuprobe.contract import (
    EXIT_BAD_PARAMS,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    HEARTBEAT_ENV,
    PREFETCH_TORCH_FLAG,
    QUICK_EXIT_FLAG,
    ProbeResult,
    Tool,
)
from cuprobe.probes import allocator, registry
from cuprobe.probes.base import ProbeRefused, ProbeUnavailable, Recorder
from cuprobe.probes.poison import FILL, PoisonPlan
from cuprobe.probes.prefetch import TorchPrefetch, prefetch_torch
from cuprobe.probes.warm import WARM_LEVELS, Warmed, read_params, warm_up


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m cuprobe.probes", description=__doc__)
    parser.add_argument("name", help="probe name")
    parser.add_argument("--params", default="{}", help="parameters as a JSON object")
    parser.add_argument(
        "--params-from",
        type=Path,
        help="warm start: get ready first (--warm), then read the parameters (JSON) from this FIFO",
    )
    parser.add_argument("--warm", default="import", choices=WARM_LEVELS, help="what to do before the parameters come")
    parser.add_argument("--out", required=True, type=Path, help="where to write result.json")
    parser.add_argument(
        "--tool", default=os.environ.get(internal_env.TOOL, "none"), choices=[t.value for t in Tool]
    )
    parser.add_argument(
        "--poison",
        default="none",
        choices=["none", "ff", "zero", "sentinel"],
        help="fill every fresh allocation with 0xFF, 0x00 or the 0xA5 sentinel (the confirmer's bare re-runs)",
    )
    parser.add_argument(
        "--watch",
        default="{}",
        help="JSON: case id -> buffers to snapshot before their reader; `all`: every buffer at every checkpoint",
    )
    parser.add_argument(
        "--then",
        action="append",
        default=[],
        metavar="POISON=FILE",
        help="once this run has completed, run the probe again in this process with another poison (the same --watch "
        "and --confirm-control), writing that run's result.json to FILE; repeatable, in order",
    )
    parser.add_argument(
        "--confirm-control", action="store_true", help="also run the confirmer's planted control cases"
    )
    parser.add_argument(
        QUICK_EXIT_FLAG,
        action="store_true",
        help="end with os._exit once the result is written: no Python finalizers, no CUDA context teardown",
    )
    parser.add_argument(
        PREFETCH_TORCH_FLAG,
        action="store_true",
        help="where the parameters use torch, import it on a second thread from the start, beside the first cases",
    )
    return parser.parse_args(argv)


def _fail(out: Path, result: ProbeResult, code: int) -> int:
    out.write_text(result.model_dump_json(indent=1), encoding="utf-8")
    return code


def _final_context(recorder: Recorder, prefetch: TorchPrefetch | None) -> None:
    """What the run's context gets at its end: torch's import on its second thread (--prefetch-torch), and the
    allocator a torch probe set up as it stands at the end (bytes cached, NVTX registrations)."""
    if prefetch is not None:
        prefetch.finish()  # a run that ended before its torch cases: no import left running as Python ends
        recorder.result.context["torch_prefetch"] = prefetch.report()
    state, torch = allocator.current(), sys.modules.get("torch")
    if state is not None and torch is not None:
        try:
            recorder.result.context.update(allocator.final_context(state, torch))
        except Exception as exc:  # never let this hide the probe's own outcome
            recorder.result.context["allocator_context_error"] = f"{type(exc).__name__}: {exc}"


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    status = _main(args)
    if args.quick_exit:
        quick_exit(status)
    return status


def _main(args: argparse.Namespace) -> int:
    tool = Tool(args.tool)
    bare = ProbeResult(probe=args.name, tool=tool)
    warmed: Warmed | None = None
    try:
        probe = registry.get(args.name)
        if args.params_from is not None:
            warmed = warm_up(args.warm)
            args.params = read_params(args.params_from, warmed)
        params = probe.Params.model_validate(json.loads(args.params))
    except (registry.UnknownProbe, ValidationError, json.JSONDecodeError) as exc:
        bare.error = f"bad parameters for probe {args.name}: {exc}"
        print(bare.error, file=sys.stderr)
        return _fail(args.out, bare, EXIT_BAD_PARAMS)
    refusal = probe.refusal(params, tool)
    if refusal:
        bare.error = f"refused: {refusal}"
        print(bare.error, file=sys.stderr)
        return _fail(args.out, bare, EXIT_BAD_PARAMS)
    try:
        runs = [(args.out, _plan(args.poison, args.watch))]
        runs += [(Path(out), _plan(mode, args.watch)) for mode, out in map(_then, args.then)]
    except (ValidationError, ValueError) as exc:
        bare.error = f"bad --watch or --then for probe {args.name}: {exc}"
        print(bare.error, file=sys.stderr)
        return _fail(args.out, bare, EXIT_BAD_PARAMS)
    why_not = probe.poison_refusal(params)
    refused = next((plan.mode for _, plan in runs if plan.fill is not None and why_not), None)
    if refused is not None:
        bare.error = f"refused: --poison {refused}: {why_not}"
        print(bare.error, file=sys.stderr)
        return _fail(args.out, bare, EXIT_BAD_PARAMS)
    prefetch = prefetch_torch() if args.prefetch_torch and probe.uses_torch(params) else None
    try:
        for index, (out, plan) in enumerate(runs):
            recorder = Recorder(probe.name, tool, params, plan)
            if warmed is not None and index == 0:
                recorder.result.context["warm_start"] = warmed.report()
            status = _run(args, out, probe, params, tool, recorder, prefetch if index == 0 else None)
            if status != EXIT_OK:  # the runs after it are not made: their result.json stays absent
                return status
        return EXIT_OK
    finally:
        if warmed is not None:
            warmed.release()


def _plan(mode: str, watch: str) -> PoisonPlan:
    """One run's poison: `mode`, snapshotting what `watch` names (`all`: every buffer)."""
    if watch == "all":
        return PoisonPlan.model_validate({"mode": mode, "watch_all": True})
    return PoisonPlan.model_validate({"mode": mode, "watch": json.loads(watch)})


def _then(value: str) -> tuple[str, str]:
    """`--then POISON=FILE` as (poison, file)."""
    mode, sep, out = value.partition("=")
    if not sep or not out or mode not in FILL:
        raise ValueError(f"--then {value!r}: expected POISON=FILE with POISON one of {', '.join(FILL)}")
    return mode, out


def _run(
    args: argparse.Namespace,
    out: Path,
    probe: Any,
    params: Any,
    tool: Tool,
    recorder: Recorder,
    prefetch: TorchPrefetch | None,
) -> int:
    recorder.artifacts_dir = out.resolve().parent
    recorder.confirming = args.confirm_control
    if probe.beats and os.environ.get(HEARTBEAT_ENV):
        recorder.heartbeat = Path(os.environ[HEARTBEAT_ENV])
    no_caching = "PYTORCH_NO_CUDA_MEMORY_CACHING"
    recorder.result.context[no_caching] = os.environ.get(no_caching)
    try:
        probe.run(params, tool, recorder)
        if args.confirm_control:
            from cuprobe.probes.confirm_control import run_control_cases

            run_control_cases(tool, recorder)
        recorder.close_case()  # the last case's time ends here, not after the context below
    except ProbeRefused as exc:
        _final_context(recorder, prefetch)
        recorder.result.error = f"refused: {exc}"
        print(recorder.result.error, file=sys.stderr)
        recorder.write(out)
        return EXIT_BAD_PARAMS
    except ProbeUnavailable as exc:
        _final_context(recorder, prefetch)
        recorder.result.unavailable = str(exc)
        print(f"unavailable: {exc}", file=sys.stderr)
        recorder.write(out)
        return EXIT_UNAVAILABLE
    except Exception:
        recorder.result.error = traceback.format_exc(limit=20)
        _final_context(recorder, prefetch)
        print(recorder.result.error, file=sys.stderr)
        recorder.write(out)
        return EXIT_ERROR
    if probe.gpu_needed(params) or args.confirm_control:
        from cuprobe.probes.gpu import cuda_devices, schedule_name

        recorder.result.context["cuda_devices"] = cuda_devices()
        recorder.result.context["cuda_schedule"] = schedule_name()
    _final_context(recorder, prefetch)
    recorder.result.complete = True  # the completion sentinel: set only after every case ran
    recorder.write(out)
    return EXIT_OK


def quick_exit(code: int) -> NoReturn:
    """End the process now with `code`, its output flushed: Python's finalizers (atexit, torch's and pycuda's) and
    the CUDA contexts' teardown are skipped; the driver frees what the process held as it exits."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
