"""The event -> NVTX registration rules (probes/allocator_events.py) on recorded allocator traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.probes.allocator_events import NvtxCall, Registrar, load_device_traces, replay

DATA = Path(__file__).resolve().parents[2] / "data" / "allocator"
S1, S2, OLD = 0x7F0000000000, 0x7F0000200000, 0x7EFF00000000
# Traces recorded on the GPU box with the C++ extension's own call log beside them (tests/gpu/allocator.sh).
LOGGED = sorted(p for p in DATA.glob("*.json") if p.with_suffix(".nvtx.log").exists())


def test_synthetic_trace_gives_the_calls_worked_out_by_hand() -> None:
    registrar = Registrar()
    calls = replay(load_device_traces(DATA / "synthetic_trace.json")[0], registrar)
    assert calls == [
        NvtxCall("heap_register", S1, 2097152),
        NvtxCall("region_register", S1, 4000, S1),  # the requested 4000 bytes, not the 4096-byte block
        NvtxCall("region_register", S1 + 4096, 4000, S1),
        NvtxCall("region_unregister", S1),
        NvtxCall("region_register", S1, 4000, S1),  # the reused block, registered afresh
        NvtxCall("region_unregister", S1 + 4096),  # at free_completed, not at free_requested
        NvtxCall("heap_register", S2, 20971520),
        NvtxCall("region_register", S2, 8388608, S2),
        NvtxCall("region_unregister", S1),
        NvtxCall("heap_unregister", S1),
        NvtxCall("region_unregister", S2),
        NvtxCall("heap_unregister", S2),
    ]
    assert registrar.heaps == {} and registrar.regions == {}
    assert sum(registrar.skipped.values()) == 3  # the pre-attach alloc and free, the expandable segment_map
    assert any("segment_map" in reason for reason in registrar.skipped)


def test_one_past_a_tensor_is_in_its_heap_but_in_no_region() -> None:
    registrar = Registrar()
    replay(load_device_traces(DATA / "synthetic_trace.json")[0][:4], registrar)
    past_end = S1 + 4000
    assert registrar.heap_of(past_end) == S1
    assert not any(start <= past_end < start + size for start, size in registrar.regions.items())


def test_unregistering_a_heap_drops_its_regions() -> None:
    registrar = Registrar()
    registrar.apply("segment_alloc", S1, 2097152)
    registrar.apply("alloc", S1 + 512, 100)
    assert registrar.apply("segment_free", S1, 2097152) == [NvtxCall("heap_unregister", S1)]
    assert registrar.regions == {}
    assert registrar.apply("free_completed", S1 + 512, 100) == []  # its region went with the heap
    assert registrar.apply("alloc", S1, 100) == []  # no heap holds it any more


def test_blocks_outside_every_known_segment_are_skipped_not_registered() -> None:
    registrar = Registrar()
    registrar.apply("segment_alloc", S1, 2097152)
    assert registrar.apply("alloc", S1 + 2097152, 64) == []  # the first byte past the segment
    assert registrar.apply("alloc", OLD, 64) == []
    assert registrar.skipped["alloc in a segment allocated before the tracker was attached"] == 2


def test_an_action_torch_does_not_emit_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'segment_resize'"):
        Registrar().apply("segment_resize", S1, 1)


def test_a_file_without_device_traces_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "snapshot.json"
    bad.write_text('{"segments": []}')
    with pytest.raises(ValueError, match="device_traces"):
        load_device_traces(bad)


@pytest.mark.parametrize("trace", LOGGED, ids=[p.stem for p in LOGGED])
def test_the_twin_makes_exactly_the_calls_the_extension_logged(trace: Path) -> None:
    logged = trace.with_suffix(".nvtx.log").read_text().splitlines()
    twin = [call.line() for device in load_device_traces(trace) for call in replay(device)]
    assert twin == logged
