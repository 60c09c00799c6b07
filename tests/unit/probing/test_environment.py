"""Which GPU a result says it ran on: nvidia-smi's rows filtered the way CUDA_VISIBLE_DEVICES filters CUDA."""

from __future__ import annotations

from service.probing.environment import visible_rows

ROWS = [
    ["0", "GPU-aaaa-1111", "NVIDIA H200", "580.159.04"],
    ["1", "GPU-bbbb-2222", "NVIDIA H200", "580.159.04"],
]


def test_unset_means_every_gpu() -> None:
    assert visible_rows(ROWS, None) == ROWS


def test_a_worker_pinned_by_uuid_sees_only_its_gpu() -> None:
    assert visible_rows(ROWS, "GPU-bbbb-2222") == [ROWS[1]]


def test_pinned_by_index_and_order_kept() -> None:
    assert visible_rows(ROWS, "1,0") == [ROWS[1], ROWS[0]]


def test_empty_hides_every_gpu_as_cuda_does() -> None:
    assert visible_rows(ROWS, "") == []


def test_cuda_stops_at_the_first_unknown_entry() -> None:
    assert visible_rows(ROWS, "0,7,1") == [ROWS[0]]
