"""replay: a torch program run in fresh processes with the same seeds, compared tensor by tensor.

A program without an optimizer marks its step boundaries with `cuprobe.probes.replay.step()`.
"""

from __future__ import annotations


def step() -> None:
    """Mark a step boundary (for programs without an optimizer); does nothing outside a replay process."""
    from cuprobe.probes.replay import tape

    if tape.ACTIVE is not None:
        tape.ACTIVE.mark_step()
