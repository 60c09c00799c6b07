"""Values from a request reach the sanitizer's command line only in the position they were checked for."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import ProbeRequest
from cuprobe.service.models.options import SanitizerOptions
from cuprobe.service.probing.admission import BadRequest
from cuprobe.service.probing.runner import run_probe
from cuprobe.service.sanitizer.command import sanitizer_command


def test_builder_refuses_a_kernel_name_that_adds_options() -> None:
    with pytest.raises(ValueError, match="not a kernel name"):
        sanitizer_command(Path("/cs"), Tool.INITCHECK, ["prog"], xml=Path("x.xml"), error_exitcode=86,
                          kernel_filter=["x,kne=y"])
    cmd = sanitizer_command(Path("/cs"), Tool.INITCHECK, ["prog"], xml=Path("x.xml"), error_exitcode=86,
                            kernel_filter=["gemm"], suppressions=Path("--injection-path=/tmp/x"))
    assert "--kernel-name=kns=gemm" in cmd
    (supp,) = [arg for arg in cmd if arg.startswith("--suppressions")]
    assert Path(supp.removeprefix("--suppressions=")).is_absolute()


@pytest.mark.parametrize("field", ["nvtx_include", "nvtx_exclude"])
def test_an_nvtx_scope_that_reads_as_an_option_is_refused(field: str) -> None:
    """`nvtx_exclude: ["--preload-library=/tmp/evil.so"]` would have become an option of compute-sanitizer's own."""
    with pytest.raises(ValidationError, match="never starts with '-'"):
        SanitizerOptions.model_validate({field: ["--preload-library=/tmp/evil.so"]})
    with pytest.raises(ValidationError, match="never starts with '-'"):
        SanitizerOptions.model_validate({"suppressions": "--injection-path=/tmp/x"})


def test_values_that_name_things_are_passed_as_one_argument() -> None:
    options = SanitizerOptions(nvtx_include=["forward"], nvtx_exclude=["warm up"], kernel_name_exclude=["kns=x"])
    cmd = sanitizer_command(Path("/cs"), Tool.INITCHECK, ["prog"], xml=Path("x.xml"), error_exitcode=86,
                            options=options, suppressions=Path("/s/team.supp"))
    options_part = cmd[: cmd.index("--")]
    assert {"--nvtx-include=forward", "--nvtx-exclude=warm up", "--kernel-name-exclude=kns=x",
            "--suppressions=/s/team.supp"} <= set(options_part)
    assert "forward" not in options_part and "warm up" not in options_part  # never an argument of its own


@pytest.mark.parametrize("name", ["../../etc/shadow", "/etc/shadow", "--injection-path=/tmp/x", "absent.supp"])
def test_a_job_names_its_suppressions_file_in_the_configured_directory(name: str, tmp_path: Path) -> None:
    (tmp_path / "team.supp").write_text("<suppressions/>")
    settings = Settings(suppressions_dir=tmp_path)
    request = ProbeRequest(probe="selftest", tool=Tool.MEMCHECK, suppressions=name)
    with pytest.raises(BadRequest, match="suppressions"):
        run_probe(request, workdir=tmp_path / "run", settings=settings)
