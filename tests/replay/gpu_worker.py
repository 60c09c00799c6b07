"""A Celery worker for the integration tests, as `python -m celery ...` but on a machine whose GPU is the replay's:
the one stand-in is what the driver says (the capture's H200, as tests/conftest.py `replaying` gives a test's own
process); the probes run under the replay compute-sanitizer named by CUPROBE_SANITIZER_PATH.
    python tests/replay/gpu_worker.py -A tasks.app worker ...
"""

from __future__ import annotations

import sys

from celery.__main__ import main

from cuprobe.service.probing import runner
from cuprobe.service.probing.environment import GpuFacts

if __name__ == "__main__":
    runner.gpu_facts = lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0")  # type: ignore[assignment]
    sys.argv = ["celery", *sys.argv[1:]]
    sys.exit(main())
