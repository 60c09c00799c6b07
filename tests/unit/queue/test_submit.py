"""Submission checks: the field named in each refusal, queues per architecture and lane, settings limits."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pydantic import ValidationError

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.db.store import Job, Store
from cuprobe.service.models.queues import Lane, queue_for
from cuprobe.service.probing.admission import BadRequest
from cuprobe.service.queue.submit import JobSpec, check, submit


def _refusal(settings: Settings | None = None, **spec: object) -> BadRequest:
    with pytest.raises(BadRequest) as info:
        check(JobSpec.model_validate(spec), settings or Settings())
    return info.value


def test_refusals_name_the_field() -> None:
    assert _refusal(probe="nope").field == "probe"
    assert _refusal(probe="determinism", tool="memcheck").field == "tool"  # bare only
    assert _refusal(probe="selftest", params={"behaviour": "dance"}).field == "params.behaviour"
    assert _refusal(probe="selftest", params={"extra": 1}).field == "params.extra"
    assert _refusal(probe="uninit-read", params={"n": 4, "k": 8}).field == "params"
    assert _refusal(probe="selftest", timeout_s=10_000).field == "timeout_s"


def test_command_probe_is_forbidden_unless_enabled() -> None:
    refusal = _refusal(probe="command")
    assert (refusal.status, refusal.field) == (403, "probe")


def test_replay_of_the_users_own_program_is_forbidden_unless_enabled() -> None:
    for params in (
        {"entry": "train:main"},
        {"script": ["train.py", "--steps", "3"]},
        {"example": "transformer", "cwd": "/srv/someone"},  # on the example's PYTHONPATH
        {"example": "transformer", "triton_cache_dir": "/srv/kernels"},  # compiled kernels loaded as they are
    ):
        refusal = _refusal(probe="replay", params=params)
        assert (refusal.status, refusal.field) == (403, "probe") and "CUPROBE_REPLAY_PROBE_ENABLED" in refusal.message
        enabled = Settings(replay_probe_enabled=True)
        assert check(JobSpec(probe="replay", params=params), enabled).params["processes"] == 3
    example = check(JobSpec(probe="replay", params={"example": "transformer"}), Settings())
    assert example.params["example"] == "transformer" and example.tool == "none"


def test_check_fills_in_the_default_tool_and_params() -> None:
    spec = check(JobSpec(probe="uninit-read"), Settings())
    assert spec.tool == "initcheck" and spec.params["n"] == 1024


def test_spec_rejects_a_bad_arch() -> None:
    with pytest.raises(ValidationError):
        JobSpec.model_validate({"probe": "uninit-read", "arch": "hopper"})


def test_queues() -> None:
    assert queue_for(needs_gpu=True, arch="sm90", lane=Lane.GATE) == "gpu.sm90"
    assert queue_for(needs_gpu=True, arch="sm90", lane=Lane.SWEEP) == "gpu.sm90.sweep"
    assert queue_for(needs_gpu=False, arch="sm90", lane=Lane.SWEEP) == "cpu.sweep"
    assert sorted(["gpu.sm90.sweep", "gpu.sm90"])[0] == "gpu.sm90"  # workers poll sorted: gate first


def test_time_limits_must_sit_below_the_visibility_timeout() -> None:
    # The hard limit follows the soft one (a thirtieth more, at least 5 s): 1800 s gives 1860 s.
    assert Settings(task_soft_time_limit_s=1800).task_time_limit_s == 1860
    assert Settings(task_soft_time_limit_s=30, visibility_timeout_s=40).task_time_limit_s == 35
    with pytest.raises(ValidationError, match="hard limit at 155 s, which must stay below visibility_timeout_s 150"):
        Settings(task_soft_time_limit_s=150, visibility_timeout_s=150)


def test_a_workers_registry_heartbeat_lives_six_beats() -> None:
    assert Settings().worker_ttl_s == 30 and Settings(worker_beat_s=0.5).worker_ttl_s == 3


def test_a_failing_enqueue_is_logged_with_its_cause_and_the_job_stays_stored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    store.migrate()

    def broker_down(job: Job) -> None:
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6399. Connection refused.")

    with caplog.at_level(logging.WARNING, logger="cuprobe.service.queue.submit"):
        job = submit(JobSpec(probe="selftest"), store, Settings(), broker_down)
    stored = store.get(job.id)
    assert stored is not None and stored.state == "queued" and stored.enqueued_at is None  # the reconciler resends it
    (record,) = [r for r in caplog.records if job.id in r.getMessage()]
    assert record.exc_info is not None and isinstance(record.exc_info[1], ConnectionError)
    assert "Connection refused" in caplog.text  # the cause, with its traceback
@pytest.mark.parametrize("value", ["/etc/shadow", "../../root/.ssh/id_rsa", "--injection-path=/tmp/x"])
def test_suppressions_are_a_name_never_a_path_or_an_option(value: str, tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as info:
        JobSpec.model_validate({"probe": "selftest", "suppressions": value})
    assert info.value.errors()[0]["loc"] == ("suppressions",)
    # Even a name must be a file in the configured directory.
    refusal = _refusal(Settings(suppressions_dir=tmp_path), probe="selftest", suppressions="shadow")
    assert refusal.field == "suppressions"
    assert _refusal(probe="selftest", suppressions="team.supp").field == "suppressions"  # no directory configured


def test_a_suppressions_name_in_the_configured_directory_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "team.supp").write_text("<suppressions/>")
    settings = Settings(suppressions_dir=tmp_path)
    spec = check(JobSpec(probe="selftest", tool=Tool.MEMCHECK, suppressions="team.supp"), settings)
    assert spec.suppressions == "team.supp"
    with pytest.raises(BadRequest, match="a bare run \\(tool none\\) would ignore it") as refused:
        check(JobSpec(probe="selftest", tool=Tool.NONE, suppressions="team.supp"), settings)
    assert refused.value.field == "suppressions"


@pytest.mark.parametrize("name", ["x,kne=y", "x=y", "-x", "a\x00b", "a\nb"])
def test_kernel_filter_values_cannot_add_filter_options(name: str) -> None:
    with pytest.raises(ValidationError) as info:
        JobSpec.model_validate({"probe": "selftest", "kernel_filter": ["ok_kernel", name]})
    assert info.value.errors()[0]["loc"] == ("kernel_filter", 1)
    JobSpec.model_validate({"probe": "selftest", "kernel_filter": ["narrow_matmul<32>", "ns::gemm_kernel"]})


def test_nul_byte_in_params_is_refused_naming_the_field() -> None:
    refusal = _refusal(Settings(command_enabled=True), probe="command", params={"argv": ["/bin/true", "a\x00b"]})
    assert (refusal.status, refusal.field) == (422, "params.argv.1") and "NUL" in refusal.message


def test_a_string_that_is_not_valid_unicode_is_refused_naming_the_field() -> None:
    enabled = Settings(command_enabled=True)
    refusal = _refusal(enabled, probe="command", params={"argv": ["/bin/true", "x\ud800"]})
    assert (refusal.status, refusal.field) == (422, "params.argv.1") and "lone surrogate (U+D800)" in refusal.message
    options = {"kernel_name": ["kns=\udc80"]}
    refusal = _refusal(enabled, probe="command", params={"argv": ["/bin/true"]}, options=options)
    assert (refusal.status, refusal.field) == (422, "options.kernel_name.0")
