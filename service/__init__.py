"""cuprobe: a sanitizer-driven correctness service for GPU kernels."""

__version__ = "0.1.0"  # the one place: pyproject.toml reads it (dynamic version)
