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
    """pycuda SourceModule of kernels/NAME.cu, its line info naming the real file.

    pycuda compiles a copy in a temporary folder; a relative `#line` is resolved against that folder
    (seen on the H200: /tmp/tmpXXXX/kernels/uninit_read.cu), so the directive carries the absolute path,
    which cuprobe then makes relative to the source root.
    """
    from pycuda.compiler import SourceModule

    path = source_path(name)
    source = f'#line 1 "{path}"\n' + path.read_text()
    return SourceModule(source, options=list(options), no_extern_c=True)
