"""Sanitizer options: typed, refused for the wrong tool or a sanitizer without them, built into one command line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from cuprobe.contract import Tool
from cuprobe.service.models import SanitizerOptions
from cuprobe.service.models.options import NOT_PASSED, OPTION_TOOL
from cuprobe.service.sanitizer.command import passed_anyway, sanitizer_command
from cuprobe.service.sanitizer.options import HelpOptions, OptionRefused, check_options, parse_help
from tests.conftest import CAPTURES, VERSIONS


def help_of(version: str) -> HelpOptions:
    """The help text captured from the real binary (tests/gpu/capture.sh) for `version`."""
    return parse_help((CAPTURES / version / "help.txt").read_text())


@pytest.mark.parametrize("version", VERSIONS)
def test_help_lists_every_modelled_option_under_its_tool(version: str) -> None:
    known = help_of(version)
    assert known.version == version
    assert known.options["--leak-check"] is Tool.MEMCHECK and known.options["--padding"] is Tool.MEMCHECK
    assert known.options["--racecheck-report"] is Tool.RACECHECK
    assert known.options["--track-unused-memory"] is Tool.INITCHECK
    assert known.options["--check-api-memory-access"] is Tool.INITCHECK
    assert known.options["--launch-count"] is None and known.options["--kernel-name-exclude"] is None
    modelled = {"--" + name.replace("_", "-") for name in SanitizerOptions.model_fields}
    assert modelled == set(OPTION_TOOL)
    if version == VERSIONS[1]:  # the newer sanitizer has every option cuprobe passes
        assert modelled <= set(known.options)
    for flag in modelled & set(known.options):  # and the table names the tool the help lists it under
        assert OPTION_TOOL[flag] is known.options[flag], flag


@pytest.mark.parametrize("version", VERSIONS)
def test_every_option_cuprobe_does_not_pass_is_a_real_one_with_a_reason(version: str) -> None:
    known = help_of(VERSIONS[1])
    for name, why in NOT_PASSED.items():
        assert f"--{name}" in known.options and f"--{name}" not in OPTION_TOOL and why, name
        field = name.replace("-", "_")
        with pytest.raises(ValidationError, match=f"cuprobe does not pass --{name}: "):
            SanitizerOptions.model_validate({field: "yes"})


def test_an_option_only_the_newer_sanitizer_has_is_refused_by_the_older() -> None:
    for options in (SanitizerOptions(check_tensor_ops=True), SanitizerOptions(nvtx_include=["setup"])):
        with pytest.raises(OptionRefused, match=r"compute-sanitizer 2025\.3\.1\.0 has no option --"):
            check_options(options, Tool.MEMCHECK, help_of(VERSIONS[0]))
        check_options(options, Tool.MEMCHECK, help_of(VERSIONS[1]))
    with pytest.raises(OptionRefused, match="--check-cache-control is a memcheck option"):
        check_options(SanitizerOptions(check_cache_control=True), Tool.INITCHECK, help_of(VERSIONS[1]))


def test_checking_options_reach_the_command_line_and_speed_only_ones_stay_out_of_signatures() -> None:
    options = SanitizerOptions(
        report_api_errors="all",
        check_cache_control=True,
        detect_missing_module_unload=False,
        track_stream_ordered_races="use-after-free",
        nvtx_exclude=["warmup"],
        check_exit_code=False,
        force_synchronization_limit=4,
    )
    cmd = sanitizer_command(Path("/cs"), Tool.MEMCHECK, ["./app"], xml=Path("x"), error_exitcode=86, options=options)
    tail = cmd[cmd.index("86") + 1 :]
    assert tail == [
        "--check-exit-code",
        "no",
        "--nvtx-exclude=warmup",
        "--force-synchronization-limit",
        "4",
        "--check-cache-control",
        "--report-api-errors",
        "all",
        "--track-stream-ordered-races",
        "use-after-free",
        "--",
        "./app",
    ]
    assert options.signature_key() == (  # a synchronization limit changes which stream orders the run sees
        "check-exit-code=no,nvtx-exclude=warmup,force-synchronization-limit=4,check-cache-control,"
        "report-api-errors=all,track-stream-ordered-races=use-after-free"
    )
    workers = SanitizerOptions(racecheck_num_workers=4, racecheck_report="hazard")
    assert workers.signature_key() == "racecheck-report=hazard"  # how many threads the tool uses: speed only
    assert options.filters_kernels and not SanitizerOptions(report_api_errors="all").filters_kernels
    with pytest.raises(ValidationError, match="unused_memory_threshold"):
        SanitizerOptions(unused_memory_threshold=101)


def test_newer_sanitizer_has_options_the_older_lacks() -> None:
    old, new = help_of(VERSIONS[0]), help_of(VERSIONS[1])
    assert "--check-tensor-ops" in new.options and "--check-tensor-ops" not in old.options
    assert new.options["--initcheck-address-space"] is Tool.INITCHECK


@pytest.mark.parametrize("version", VERSIONS)
def test_an_option_of_another_tool_is_refused_naming_option_tool_and_version(version: str) -> None:
    with pytest.raises(
        OptionRefused,
        match=rf"--leak-check is a memcheck option \(compute-sanitizer {version}\), "
        "not one for racecheck",
    ):
        check_options(SanitizerOptions(leak_check="full"), Tool.RACECHECK, help_of(version))
    check_options(SanitizerOptions(leak_check="full", padding=512, nvtx=True), Tool.MEMCHECK, help_of(version))


def test_an_option_the_installed_sanitizer_lacks_is_refused_naming_the_version() -> None:
    # The 2025.3.1.0 help with --padding taken out: what an older sanitizer without the option would list.
    real = help_of(VERSIONS[0])
    older = HelpOptions("2025.3.1.0-without-padding", {k: v for k, v in real.options.items() if k != "--padding"})
    with pytest.raises(OptionRefused, match=r"compute-sanitizer 2025\.3\.1\.0-without-padding has no option --padding"):
        check_options(SanitizerOptions(padding=64), Tool.MEMCHECK, older)


def test_without_a_binary_the_table_still_refuses_foreign_options() -> None:
    with pytest.raises(OptionRefused, match="--track-unused-memory is a initcheck option"):
        check_options(SanitizerOptions(track_unused_memory=True), Tool.MEMCHECK)
    with pytest.raises(OptionRefused, match="need a sanitizer tool"):
        check_options(SanitizerOptions(padding=8), Tool.NONE)


def test_bad_values_are_refused_by_the_model() -> None:
    with pytest.raises(ValidationError, match="leak_check"):
        SanitizerOptions.model_validate({"leak_check": "partial"})
    with pytest.raises(ValidationError, match="not a kernel filter"):
        SanitizerOptions(kernel_name=["gemm"])
    with pytest.raises(ValidationError, match="extra"):
        SanitizerOptions.model_validate({"leak_checks": "full"})


def test_the_one_command_line_carries_the_options_and_keeps_cuprobe_defaults_unless_overridden() -> None:
    options = SanitizerOptions(
        leak_check="full", padding=512, check_device_heap=True, nvtx=True, kernel_name=["kns=gemm"], launch_count=3
    )
    cmd = sanitizer_command(
        Path("/cs"),
        Tool.MEMCHECK,
        ["./app"],
        xml=Path("x.xml"),
        error_exitcode=86,
        options=options,
        suppressions=Path("/repo/supp.xml"),
    )
    tail = cmd[cmd.index("86") + 1 :]
    assert tail == [
        "--leak-check",
        "full",
        "--padding",
        "512",
        "--check-device-heap",
        "yes",
        "--kernel-name=kns=gemm",
        "--launch-count",
        "3",
        "--nvtx",
        "yes",
        "--suppressions=/repo/supp.xml",
        "--",
        "./app",
    ]
    race = sanitizer_command(Path("/cs"), Tool.RACECHECK, ["./a"], xml=Path("x"), error_exitcode=86)
    assert race[race.index("--racecheck-report") + 1] == "analysis"
    hazard = sanitizer_command(
        Path("/cs"),
        Tool.RACECHECK,
        ["./a"],
        xml=Path("x"),
        error_exitcode=86,
        options=SanitizerOptions(racecheck_report="hazard"),
    )
    assert hazard.count("--racecheck-report") == 1 and hazard[hazard.index("--racecheck-report") + 1] == "hazard"
    unused = sanitizer_command(
        Path("/cs"),
        Tool.INITCHECK,
        ["./a"],
        xml=Path("x"),
        error_exitcode=86,
        options=SanitizerOptions(track_unused_memory=True),
    )
    assert "--track-unused-memory" in unused and unused[unused.index("--track-unused-memory") + 1] == "--"


def test_the_options_key_is_stable_and_names_what_is_set() -> None:
    assert SanitizerOptions().key() == ""
    assert SanitizerOptions(padding=512, leak_check="full").key() == "leak-check=full,padding=512"
    merged = SanitizerOptions(leak_check="full").merged(SanitizerOptions(padding=8))
    assert merged.key() == "leak-check=full,padding=8"


def test_a_value_the_older_sanitizer_lacks_is_refused_by_its_help() -> None:
    """report-api-errors extended is new in 2026.4: its --help lists the values, and 2025.3's lacks it."""
    options = SanitizerOptions(report_api_errors="extended")
    with pytest.raises(
        OptionRefused, match=r"2025\.3\.1\.0's --report-api-errors takes all, explicit, no, not extended"
    ):
        check_options(options, Tool.MEMCHECK, help_of(VERSIONS[0]))
    check_options(options, Tool.MEMCHECK, help_of(VERSIONS[1]))
    check_options(SanitizerOptions(kernel_name=["kns=gemm"]), Tool.MEMCHECK, help_of(VERSIONS[0]))  # not a choice


def test_racecheck_info_level_keeps_its_records_in_the_saved_xml() -> None:
    """The print level filters what the sanitizer saves: detecting info-level races asks to keep them."""
    info = SanitizerOptions(racecheck_detect_level="info")
    cmd = sanitizer_command(Path("/cs"), Tool.RACECHECK, ["./a"], xml=Path("x"), error_exitcode=86, options=info)
    assert cmd[cmd.index("--print-level") + 1] == "info"
    warn = SanitizerOptions(racecheck_detect_level="warn")
    assert "--print-level" not in sanitizer_command(
        Path("/cs"), Tool.RACECHECK, ["./a"], xml=Path("x"), error_exitcode=86, options=warn
    )


def test_an_option_set_to_what_cuprobe_passes_anyway_leaves_the_signature_alone() -> None:
    race = passed_anyway(Tool.RACECHECK)
    assert SanitizerOptions(racecheck_report="analysis").signature_key(race) == ""
    assert SanitizerOptions(racecheck_report="hazard").signature_key(race) == "racecheck-report=hazard"
    assert SanitizerOptions(nvtx=True).signature_key(passed_anyway(Tool.MEMCHECK)) == ""
    assert SanitizerOptions(nvtx=False).signature_key(passed_anyway(Tool.MEMCHECK)) == "nvtx=no"
    assert SanitizerOptions(force_blocking_launches=True).signature_key() == "force-blocking-launches"


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"padding": True}, "padding takes a number, not true"),
        ({"launch_count": False}, "launch-count takes a number, not false"),
        ({"kernel_name": ["kns=a,bogus=b"]}, "'bogus=b' is not a filter key=value"),
        ({"nvtx_include": [""]}, "is not an NVTX scope"),
        ({"nvtx_exclude": [" warm"]}, "is not an NVTX scope"),
        ({"nvtx": False, "nvtx_include": ["a"]}, "need NVTX support"),
        ({"num_callers_host": 5}, "cuprobe does not pass --num-callers-host"),
        ({"q": True}, "cuprobe does not pass --quiet"),
    ],
)
def test_values_a_user_would_not_mean_are_refused(values: dict[str, object], says: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(says)):
        SanitizerOptions.model_validate(values)


def test_a_regex_filter_may_hold_commas() -> None:
    assert SanitizerOptions(kernel_name=["kns=gemm,regex=a{1,2}"]).kernel_name == ["kns=gemm,regex=a{1,2}"]


def test_a_suites_options_reach_the_entries_of_their_tool() -> None:
    both = SanitizerOptions(leak_check="full", padding=64, launch_count=3, track_unused_memory=True)
    assert both.for_tool(Tool.MEMCHECK).key() == "leak-check=full,padding=64,launch-count=3"
    assert both.for_tool(Tool.INITCHECK).key() == "track-unused-memory,launch-count=3"
    assert both.for_tool(Tool.NONE).key() == ""
