"""CUDA C sources and the pycuda loader that compiles them with line info pointing at kernels/NAME.cu."""

from cuprobe.kernels.loader import load_module, source_path

__all__ = ["load_module", "source_path"]
