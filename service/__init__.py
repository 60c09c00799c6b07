"""cuprobe: a sanitizer-driven correctness service for GPU kernels."""

__version__ = "0.1.0"
