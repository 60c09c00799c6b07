"""`git bisect run`'s step program for the tests, as `python -m cuprobe.service.sweep.bisect_step` but on a machine
whose GPU is the replay's (the capture's H200, as tests/conftest.py `replaying` gives a test's own process); the
step's runs go to the replay compute-sanitizer named in its settings.
    python tests/replay/bisect_step.py SPEC.json
"""

from __future__ import annotations

import sys

from cuprobe.service.probing import runner
from cuprobe.service.probing.environment import GpuFacts
from cuprobe.service.sweep.bisect_step import main

if __name__ == "__main__":
    runner.gpu_facts = lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0")  # type: ignore[assignment]
    sys.exit(main(sys.argv[1:]))
