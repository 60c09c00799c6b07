"""Compile kernels/NAME.cu with pycuda so sanitizer reports name the real file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

KERNEL_DIR = Path(__file__).resolve().parent


def source_path(name: str) -> Path:
    """The .cu file of kernel module `name`."""
    path = KERNEL_DIR / f"{name}.cu"
    if not path.is_file():
        raise FileNotFoundError(f"no kernel source {path}")
    return path


def load_module(name: str, options: tuple[str, ...] = ("-lineinfo",)) -> Any:
    """pycuda SourceModule of kernels/NAME.cu; `#line` keeps the repository-relative path in line info."""
    from pycuda.compiler import SourceModule

    source = f'#line 1 "kernels/{name}.cu"\n' + source_path(name).read_text()
    return SourceModule(source, options=list(options), no_extern_c=True)
