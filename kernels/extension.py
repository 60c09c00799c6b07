"""Build (once, cached) and load kernels/allocator_nvtx.cpp, torch's caching allocator registered through NVTX."""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).resolve().parent / "allocator_nvtx.cpp"
NAME = "cuprobe_allocator_nvtx"
# cuprobe_nvtx_counts fills these, in this order (enum Counter in the source).
COUNTERS = (
    "events",
    "heaps_registered",
    "heaps_unregistered",
    "regions_registered",
    "regions_unregistered",
    "skipped_unknown_memory",
    "skipped_other",
    "skipped_expandable",
)


class ExtensionUnavailable(RuntimeError):
    """The extension cannot be built or loaded here; the message says why."""


@dataclass
class AllocatorExtension:
    """The loaded library and how it came to be: built now (build_s measured) or found in the cache."""

    path: Path
    build_s: float
    cached: bool
    lib: Any

    def attach(self, log_path: str = "") -> bool:
        """Attach the tracker to torch's caching allocator; False when it was already attached."""
        return int(self.lib.cuprobe_nvtx_attach(log_path.encode())) == 0

    def seed(self, segments: list[dict[str, Any]]) -> int:
        """Register what a memory snapshot says the allocator already holds; returns blocks seeded."""
        blocks = 0
        for seg in segments:
            self.lib.cuprobe_nvtx_seed(0, int(seg["address"]), int(seg["total_size"]))
            addr = int(seg["address"])
            for block in seg.get("blocks", []):
                addr = int(block.get("address", addr))
                if block.get("state") == "active_allocated":
                    self.lib.cuprobe_nvtx_seed(1, addr, int(block.get("requested_size", block["size"])))
                    blocks += 1
                addr += int(block["size"])
        return blocks

    def counts(self) -> dict[str, int]:
        """The tracker's counters: events seen, heaps and regions (un)registered, events skipped."""
        out = (ctypes.c_uint64 * len(COUNTERS))()
        self.lib.cuprobe_nvtx_counts(out, len(COUNTERS))
        return dict(zip(COUNTERS, (int(v) for v in out), strict=True))


def cache_dir() -> Path:
    """Where built extensions live: CUPROBE_EXTENSION_DIR, else the data directory's extensions/."""
    explicit = os.environ.get("CUPROBE_EXTENSION_DIR")  # cuprobe/internal_env.py's EXTENSION_DIR
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("CUPROBE_DATA_DIR", "cuprobe-data")) / "extensions"


def cuda_include() -> Path | None:
    """The CUDA toolkit's include folder (nvtx3 and cuda_runtime_api.h), or None."""
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "include" / "nvtx3" / "nvToolsExtMem.h").is_file():
            return Path(root) / "include"
    return None


CFLAGS = ("-O2",)
BUILT = "built"  # written once the library is complete: its presence lets a process load it without building


def build_directory(root: Path, torch_version: str) -> Path:
    """One folder per torch version, source revision and flags, so none reuses another's library."""
    digest = hashlib.sha256(SOURCE.read_bytes() + repr(CFLAGS).encode()).hexdigest()[:12]
    return root / f"allocator_nvtx-{re.sub(r'[^A-Za-z0-9.]+', '_', torch_version)}-{digest}"


def load(root: Path | None = None, verbose: bool = False) -> AllocatorExtension:
    """Load the built extension, or build it first; ExtensionUnavailable says why not.

    A built library is loaded directly: no ninja run and no lock, so K probe processes started together (a GPU
    worker's sanitizer slots) load it side by side. Building takes an OS file lock, which dies with its holder;
    torch's own build lock is a plain file that a killed builder leaves behind, after which every later load waits
    for it forever, so one found while holding ours is stale and removed.
    """
    try:
        import torch
        from torch.utils import cpp_extension
    except ImportError as exc:
        raise ExtensionUnavailable(f"torch is not importable: {exc}") from exc
    folder = build_directory(root or cache_dir(), torch.__version__)
    library = folder / f"{NAME}.so"
    if (folder / BUILT).is_file() and library.is_file():
        return _opened(library, 0.0, cached=True)
    include = cuda_include()
    if include is None:
        raise ExtensionUnavailable(
            "no CUDA toolkit headers with nvtx3/nvToolsExtMem.h (looked in $CUDA_HOME, $CUDA_PATH, "
            "/usr/local/cuda): set CUDA_HOME to the toolkit"
        )
    from filelock import FileLock

    folder.mkdir(parents=True, exist_ok=True)
    torch_lib = Path(torch.__file__).resolve().parent / "lib"
    with FileLock(str(folder / "cuprobe-build.lock")):
        if (folder / BUILT).is_file() and library.is_file():  # built by another process while this one waited
            return _opened(library, 0.0, cached=True)
        (folder / "lock").unlink(missing_ok=True)  # torch's build lock: only a holder of ours makes one
        t0 = time.perf_counter()
        try:
            path = cpp_extension.load(
                name=NAME,
                sources=[str(SOURCE)],
                extra_include_paths=[str(include)],
                extra_cflags=list(CFLAGS),
                extra_ldflags=[f"-L{torch_lib}", "-lc10_cuda", "-lc10", f"-Wl,-rpath,{torch_lib}"],
                build_directory=str(folder),
                is_python_module=False,
                verbose=verbose,
            )
        except (RuntimeError, OSError, ImportError) as exc:
            cpu = " (torch " + torch.__version__ + " is a CPU build: it has no CUDA caching allocator)"
            raise ExtensionUnavailable(
                f"building {SOURCE.name} failed{cpu if torch.version.cuda is None else ''}: {_tail(str(exc))}"
            ) from exc
        build_s = time.perf_counter() - t0
        (folder / BUILT).write_text(f"{Path(str(path)).name}\n")
    return _opened(Path(str(path)), round(build_s, 3), cached=False)


def _opened(path: Path, build_s: float, cached: bool) -> AllocatorExtension:
    lib = ctypes.CDLL(str(path))
    lib.cuprobe_nvtx_attach.argtypes = [ctypes.c_char_p]
    lib.cuprobe_nvtx_attach.restype = ctypes.c_int
    lib.cuprobe_nvtx_seed.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64]
    lib.cuprobe_nvtx_counts.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_int]
    return AllocatorExtension(path=path, build_s=build_s, cached=cached, lib=lib)


def _tail(text: str, limit: int = 600) -> str:
    """The last `limit` characters of a build error, on one line (the compiler's verdict is at the end)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else "..." + flat[-limit:]
