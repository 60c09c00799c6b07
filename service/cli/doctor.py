"""`cuprobe doctor`: what this machine has for running probes (GPU, driver, sanitizer, pycuda, torch)."""

from __future__ import annotations

import importlib.util

from rich.console import Console
from rich.markup import escape

from cuprobe.service.config import Settings
from cuprobe.service.models import ExitCode
from cuprobe.service.probing.environment import gpu_facts
from cuprobe.service.probing.gpus import visible_gpus
from cuprobe.service.sanitizer.locate import SanitizerMissing, candidates, find_sanitizer, sanitizer_version
from cuprobe.service.worker.gpu_slots import located_version, slots_for, steadier_sanitizer
from cuprobe.service.worker.warm import warm_line

console = Console()


def diagnose(settings: Settings) -> ExitCode:
    """Print what this machine has for GPU probes; CLEAN when it is ready for them, NOT_RUN otherwise."""
    gpu, driver, cuda, uuid = gpu_facts()
    ready = True
    console.print(
        f"GPU: {gpu or '[red]none found (NVML, nvidia-smi)[/]'} {uuid or ''}  "
        f"driver: {driver or '-'}  CUDA: {cuda or '-'}"
    )
    ready &= gpu is not None
    devices = visible_gpus()
    version = located_version(settings.sanitizer_path) if devices else None
    for device in devices:
        k, why = slots_for(device, len(devices), settings.gpu_slots, version, settings.confirm)
        console.print(f"  gpu{device.index}: {k} sanitizer process(es) at once ({escape(why)})")
        console.print(f"    a worker on it: {escape(warm_line(settings, k))}")
    if devices and not settings.gpu_slots and settings.confirm:  # a local sweep's batches share one set of re-runs
        local = slots_for(devices[0], len(devices), 0, version, False)[0]
        console.print(
            f"  a sweep run here (cuprobe sweep run): {local} at once (its batches share one set of the "
            "confirmation's re-runs)"
        )
    if devices and not settings.gpu_slots and (other := steadier_sanitizer(settings.sanitizer_path)):
        k = slots_for(devices[0], len(devices), 0, other[1], settings.confirm)[0]
        console.print(
            f"  another compute-sanitizer here ({other[1]}) has no such stall: CUPROBE_SANITIZER_PATH={other[0]} "
            f"gives {k} process(es) per GPU"
        )
    for source, path in candidates(settings.sanitizer_path):
        here = path.is_file()
        version = sanitizer_version(path) if here else None
        console.print(f"  {'[green]found[/]' if here else 'absent'} {source}: {path} {version or ''}")
    try:
        chosen = find_sanitizer(settings.sanitizer_path)
        console.print(f"compute-sanitizer: [green]{chosen}[/] ({sanitizer_version(chosen) or 'version unknown'})")
    except SanitizerMissing as exc:
        console.print(f"compute-sanitizer: [red]missing[/] — {escape(str(exc))}")
        ready = False
    for module, how in (
        ("pycuda", "pip install 'cuprobe[gpu]' on a machine with the CUDA driver"),
        ("torch", "pip install 'cuprobe[torch]'"),
    ):
        present = importlib.util.find_spec(module) is not None
        console.print(f"{module}: {'[green]installed[/]' if present else f'[red]missing[/] — {escape(how)}'}")
        ready &= present or module == "torch"
    console.print(
        "[green]ready for GPU probes[/]"
        if ready
        else "[yellow]not ready for GPU probes[/] (CPU probes still run: see `cuprobe probes`)"
    )
    return ExitCode.CLEAN if ready else ExitCode.NOT_RUN
