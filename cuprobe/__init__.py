"""cuprobe: a sanitizer-driven correctness service for GPU kernels.

The repository's top-level folders are this package's subpackages: `cuprobe.service` (the core),
`cuprobe.tasks` (the Celery adapter), `cuprobe.probes` (probe programs and the plug-in API) and
`cuprobe.kernels` (CUDA sources and their loader). Nothing is installed under a generic top-level name.
"""

from pathlib import Path

__version__ = "0.1.0"  # the one place: pyproject.toml reads it (dynamic version)

# The directory that holds this package: what a child process needs on its sys.path to import cuprobe.
IMPORT_ROOT = Path(__file__).resolve().parent.parent
