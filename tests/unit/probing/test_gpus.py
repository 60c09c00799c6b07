"""GPU discovery: nvidia-smi's output parsed, and CUDA_VISIBLE_DEVICES applied by CUDA's rules (order, indices or
GPU- UUIDs and their prefixes, stop at the first entry that names no device)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.service.probing import environment, gpus
from cuprobe.service.probing.gpus import GpuDevice, GpuInventory, parse_nvidia_smi, visible

BANNER = (Path(__file__).parents[2] / "data" / "runs" / "nvidia-smi.txt").read_text()  # captured on the H200
QUERY = """0, GPU-0752b642-9ed6-da10-706b-5bbce876177d, NVIDIA H200, 9.0, 143042, 580.159.04
1, GPU-0752ffff-1111-2222-3333-444455556666, NVIDIA A100-SXM4-80GB, 8.0, 12000, 580.159.04
2, GPU-9abc0000-1111-2222-3333-444455556666, NVIDIA H200, 9.0, [N/A], 580.159.04
"""
DEVICES = parse_nvidia_smi(QUERY).devices
H200, A100, THIRD = DEVICES


def test_nvidia_smi_query_and_banner_parse() -> None:
    found = parse_nvidia_smi(QUERY, BANNER)
    assert [(d.index, d.name, d.arch, d.free_bytes) for d in found.devices] == [
        (0, "NVIDIA H200", "sm90", 143042 << 20),
        (1, "NVIDIA A100-SXM4-80GB", "sm80", 12000 << 20),
        (2, "NVIDIA H200", "sm90", None),
    ]
    assert (found.driver, found.cuda) == ("580.159.04", "13.0")
    assert parse_nvidia_smi("", "") == GpuInventory()  # no GPU, no driver: nothing invented


def test_unset_means_every_gpu_and_empty_means_none() -> None:
    assert visible(DEVICES, None) == DEVICES
    assert visible(DEVICES, "") == []  # the CPU worker's setting


def test_indices_in_cudas_order() -> None:
    assert visible(DEVICES, "2,0") == [THIRD, H200]
    assert visible(DEVICES, " 1 ") == [A100]


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("GPU-0752b642-9ed6-da10-706b-5bbce876177d", ["H200"]),  # a whole UUID: what worker_commands pins
        ("GPU-9abc", ["THIRD"]),  # a unique prefix
        ("GPU-0752,1", []),  # an ambiguous prefix names no device: CUDA stops at once
        ("GPU-9abc,0752b642-9ed6-da10-706b-5bbce876177d", ["THIRD"]),  # a UUID without GPU- is not one
    ],
)
def test_uuids_and_unique_prefixes(setting: str, expected: list[str]) -> None:
    names = {"H200": H200, "A100": A100, "THIRD": THIRD}
    assert visible(DEVICES, setting) == [names[n] for n in expected]


@pytest.mark.parametrize(("setting", "expected"), [("0,7,1", 1), ("1,-1,0", 1), ("-1", 0), ("0,MIG-abc,1", 1)])
def test_cuda_stops_at_the_first_entry_that_names_no_device(setting: str, expected: int) -> None:
    assert len(visible(DEVICES, setting)) == expected


def test_a_device_named_twice_hides_every_device() -> None:
    # Seen on the H200: CUDA_VISIBLE_DEVICES=0,0 leaves CUDA no device.
    assert visible(DEVICES, "0,0") == []
    assert visible(DEVICES, "0,GPU-0752b642,2") == []


def test_the_fingerprint_names_the_first_visible_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpus, "inventory", lambda: GpuInventory(DEVICES, "580.159.04", "13.0"))
    monkeypatch.setattr(environment, "inventory", gpus.inventory)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-9abc")
    environment.gpu_facts.cache_clear()
    try:
        facts = environment.gpu_facts()
    finally:
        environment.gpu_facts.cache_clear()
    assert (facts.name, facts.uuid, facts.driver, facts.cuda) == ("NVIDIA H200", THIRD.uuid, "580.159.04", "13.0")
    assert GpuDevice(0, "u", "x", "10.0").arch == "sm100"
