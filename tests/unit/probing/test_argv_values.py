"""Values from a request reach the sanitizer's command line only in the position they were checked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import ProbeRequest
from cuprobe.service.probing.admission import BadRequest
from cuprobe.service.probing.runner import run_probe
from cuprobe.service.sanitizer.command import sanitizer_command


def test_builder_refuses_a_kernel_name_that_adds_options() -> None:
    with pytest.raises(ValueError, match="not a kernel name"):
        sanitizer_command(Path("/cs"), Tool.INITCHECK, ["prog"], xml=Path("x.xml"), error_exitcode=86,
                          kernel_filter=["x,kne=y"])
    cmd = sanitizer_command(Path("/cs"), Tool.INITCHECK, ["prog"], xml=Path("x.xml"), error_exitcode=86,
                            kernel_filter=["gemm"], suppressions=Path("--injection-path=/tmp/x"))
    assert cmd[cmd.index("--kernel-name") + 1] == "kns=gemm"
    assert Path(cmd[cmd.index("--suppressions") + 1]).is_absolute()


@pytest.mark.parametrize("name", ["../../etc/shadow", "/etc/shadow", "--injection-path=/tmp/x", "absent.supp"])
def test_a_job_names_its_suppressions_file_in_the_configured_directory(name: str, tmp_path: Path) -> None:
    (tmp_path / "team.supp").write_text("<suppressions/>")
    settings = Settings(suppressions_dir=tmp_path)
    request = ProbeRequest(probe="selftest", tool=Tool.MEMCHECK, suppressions=name)
    with pytest.raises(BadRequest, match="suppressions"):
        run_probe(request, workdir=tmp_path / "run", settings=settings)
