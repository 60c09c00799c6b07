"""The environment a probe and its children get: an allowlist of what CUDA, torch and Triton need, never secrets."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from cuprobe import internal_env

# Names that carry credentials in any family: dropped even when an allowed prefix or an operator names them.
SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|CREDENTIAL|KEY|AUTH|COOKIE|SESSION|PRIVATE|CERT|(^|_)(URL|URI|DSN)$", re.IGNORECASE
)
NAMES = frozenset(
    {
        # the process basics
        "PATH", "PWD", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM",
        "VIRTUAL_ENV", "CONDA_PREFIX", "XDG_CACHE_HOME", "CC", "CXX",
        "PYTHONPATH", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "PYTHONNOUSERSITE",
        "PYTHONUNBUFFERED",
        # the driver and runtime (device choice, JIT and module cache, library search)
        "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH", "CUDA_LAUNCH_BLOCKING",
        "CUDA_MODULE_LOADING", "CUDA_CACHE_PATH", "CUDA_CACHE_DISABLE", "CUDA_CACHE_MAXSIZE",
        "CUDA_FORCE_PTX_JIT", "CUDA_DISABLE_PTX_JIT", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_MPS_PIPE_DIRECTORY",
        "CUDA_MPS_LOG_DIRECTORY", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_TF32_OVERRIDE",
        "LD_LIBRARY_PATH",
        # what the probes themselves read
        internal_env.TOOL, "CUPROBE_COMMAND_ENABLED", "CUPROBE_COMMAND_ALLOWLIST", internal_env.WORKER_GPU,
        internal_env.ALLOCATOR, internal_env.CALLER_CWD, internal_env.EXTENSION_DIR, internal_env.NVTX_CALL_LOG,
        "CUBLAS_WORKSPACE_CONFIG",
    }
)
# Whole families of tuning variables (torch's allocator, Triton's cache, thread counts, locale).
PREFIXES = ("LC_", "PYTORCH_", "TORCH_", "TORCHINDUCTOR_", "TRITON_", "OMP_", "MKL_", "OPENBLAS_")
# What compute-sanitizer sets in the process it instruments so that the process's own children are
# instrumented too (captured on the H200: tests/data/captures/2025.3.1.0/env-child-under-memcheck.txt; it also
# points LD_LIBRARY_PATH at its own directory): a command's child keeps them.
SANITIZER_INJECTED = (
    "NVIDIA-PROCESS-TRACKING-", "NVIDIA_PROCESS_INJECTION_", "NVTX_INJECTION64_PATH", "NVTX_INJECTION32_PATH",
    "NV_SANITIZER_", "NV_COMPUTE_SANITIZER_", "COMPUTE_SANITIZER_", "CUDA_INJECTION64_PATH", "CUDA_INJECTION32_PATH",
    "LD_PRELOAD",
)  # fmt: skip


def allowed_name(name: str, extra: Iterable[str] = (), *, sanitizer_injected: bool = False) -> bool:
    """Whether variable `name` may reach a probe (or, with `sanitizer_injected`, a command's child)."""
    if sanitizer_injected and name.startswith(SANITIZER_INJECTED):
        return True
    if SECRET_NAME.search(name):
        return False
    return name in NAMES or name in set(extra) or name.startswith(PREFIXES)


def allowlisted(
    env: Mapping[str, str], extra: Iterable[str] = (), *, sanitizer_injected: bool = False
) -> tuple[dict[str, str], list[str]]:
    """`env` cut down to the allowlist; returns it and the sorted names left out."""
    extra = set(extra)
    kept = {k: v for k, v in env.items() if allowed_name(k, extra, sanitizer_injected=sanitizer_injected)}
    return kept, sorted(set(env) - set(kept))
