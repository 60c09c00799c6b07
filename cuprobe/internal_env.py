"""The variables a cuprobe process sets for the processes it starts: internal, the probe protocol, not settings.

Users configure cuprobe through its settings (CUPROBE_*, service/config.py, docs/configuration.md). The names here are
how a parent hands its child what it decided; cuprobe sets them, the child reads them, and nobody sets them by hand.
A setting that a probe also reads (CUPROBE_CONFIRM, CUPROBE_COMMAND_ENABLED, CUPROBE_COMMAND_ALLOWLIST,
CUPROBE_CACHE_DIR, CUPROBE_DATA_DIR) keeps its setting's name and is documented with the settings. What cuprobe loads
into a user's test process (probes/inject/) imports nothing of cuprobe, so it spells the names it reads out; this
module is still where each is named.
"""

from __future__ import annotations

# The sanitizer tool a probe process runs under (`none`: bare): the harness's --tool when none is given.
TOOL = "CUPROBE_TOOL"
# The directory cuprobe was started from: probes run from the project root, and replay runs the caller's program.
CALLER_CWD = "CUPROBE_CALLER_CWD"
# Set only by local runs (cuprobe exec, gate --local): the command probe runs the user's command unrestricted.
COMMAND_TRUSTED = "CUPROBE_COMMAND_TRUSTED"
# Where probes keep the extensions they build (kernels/extension.py): DATA_DIR/extensions of the parent's settings.
EXTENSION_DIR = "CUPROBE_EXTENSION_DIR"
# The file a beating probe (Probe.beats) rewrites as each case starts; the runner's watchdog reads its changes.
HEARTBEAT = "CUPROBE_HEARTBEAT"
# Where cuprobe's pytest plugin in a user's test process writes what each test did (probes/pytest_run.py).
PYTEST_REPORT = "CUPROBE_PYTEST_REPORT"
# The PYTHONPATH entry cuprobe added for its own import, which a user's command or test process takes off again.
PYTHONPATH_ADDED = "CUPROBE_PYTHONPATH_ADDED"
# torch's allocator chosen for a user's test process (probes/allocator.py: caching-nvtx, caching or no-caching).
ALLOCATOR = "CUPROBE_ALLOCATOR"
# Where the NVTX allocator extension logs its calls (tests/gpu/record_allocator_trace.py records a trace with it).
NVTX_CALL_LOG = "CUPROBE_NVTX_CALL_LOG"
# Where a pytest collection run writes its rootdir (service/owntests/discover.py).
PYTEST_ROOTDIR_FILE = "CUPROBE_PYTEST_ROOTDIR_FILE"
# The GPU a worker's pool processes serve (`cuprobe worker` sets it per GPU worker; the registry publishes it).
WORKER_GPU = "CUPROBE_WORKER_GPU"

INTERNAL: frozenset[str] = frozenset(
    {
        TOOL,
        CALLER_CWD,
        COMMAND_TRUSTED,
        EXTENSION_DIR,
        HEARTBEAT,
        PYTEST_REPORT,
        PYTHONPATH_ADDED,
        ALLOCATOR,
        NVTX_CALL_LOG,
        PYTEST_ROOTDIR_FILE,
        WORKER_GPU,
    }
)
