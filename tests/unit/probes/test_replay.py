"""replay: real CPU programs replayed in fresh processes; clean, a planted divergence, a planted overflow, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from cuprobe.contract import CaseResult
from cuprobe.probes.replay.compare import autotune_cache_problem, autotune_diff, first_divergence
from cuprobe.probes.replay.digest import bits_hash
from cuprobe.probes.replay.judge import judge_digest_paths, tensor_diff
from cuprobe.service.models import Outcome, ProbeRequest, RunResult
from cuprobe.service.probing.runner import run_probe

# The user's program, made here: a small net trained with SGD, with one planted layer per scenario.
PROGRAM = '''
import os

import torch
from torch import nn

from cuprobe.probes.replay import step


class PidNoise(nn.Module):
    """Adds noise seeded by the process id: the same seeds give a different result in every process."""

    def forward(self, x):
        gen = torch.Generator().manual_seed(os.getpid())
        return x + 1e-6 * torch.randn(x.shape, generator=gen)


class Amplify(nn.Module):
    """Multiplies by a scale that grows 1e8-fold per call: crosses 1e6 in step 2, overflows by step 6."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(()))

    def forward(self, x):
        out = x * self.scale
        self.scale = self.scale * 1e8
        return out


class PidNoiseBackward(torch.autograd.Function):
    """The identity forward; backward adds noise seeded by the process id: a divergence born in backward."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        gen = torch.Generator().manual_seed(os.getpid())
        return grad + 1e-6 * torch.randn(grad.shape, generator=gen)


class NoisyBackward(nn.Module):
    def forward(self, x):
        return PidNoiseBackward.apply(x)


class Net(nn.Module):
    def __init__(self, middle):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.middle = middle
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.middle(self.fc1(x))))


def data():
    gen = torch.Generator().manual_seed(0)
    return torch.randn(32, 8, generator=gen), torch.randn(32, 4, generator=gen)


def train(middle, loss_fn, steps):
    net, (x, y) = Net(middle), data()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()


def marked():
    """No optimizer: a hand-written update and the replay step marker."""
    net, (x, y), loss_fn = Net(nn.Identity()), data(), nn.MSELoss()
    for _ in range(3):
        net.zero_grad()
        loss_fn(net(x), y).backward()
        with torch.no_grad():
            for p in net.parameters():
                p -= 0.01 * p.grad
        step()


def noisy():
    train(PidNoise(), nn.MSELoss(), 3)


def noisy_backward():
    train(NoisyBackward(), nn.MSELoss(), 3)


def overflow():
    train(Amplify(), nn.L1Loss(), 6)


def first_process():
    """True in the first process of a replay run to ask, False after: a marker file in TMPDIR where the run sets one
    (a sandboxed job's only writable folder, its own), else in the working directory."""
    marker = os.path.join(os.environ.get("TMPDIR", "."), "first-process.marker")
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def noisy_once():
    """Noise in the first process only: the later processes, and the capture re-run's two, agree."""
    train(PidNoise() if first_process() else nn.Identity(), nn.MSELoss(), 3)


def noisy_once_other_threads():
    """As noisy_once, and the first process runs with one thread more than the others."""
    if first_process():
        torch.set_num_threads(torch.get_num_threads() + 1)
        train(PidNoise(), nn.MSELoss(), 3)
    else:
        train(nn.Identity(), nn.MSELoss(), 3)


def noisy_unless_pinned():
    """Noise unless the process runs one thread with deterministic algorithms: a result that depends on the thread
    settings and an algorithm's choice, as a reduction split per thread does."""
    pinned = torch.get_num_threads() == 1 and torch.get_num_interop_threads() == 1
    train(nn.Identity() if pinned and torch.are_deterministic_algorithms_enabled() else PidNoise(), nn.MSELoss(), 3)


def no_step():
    Net(nn.Identity())(data()[0])


def raises():
    raise ValueError("planted failure in the user's program")
'''


@pytest.fixture
def program(tmp_path: Path) -> Path:
    (tmp_path / "tinynet.py").write_text(PROGRAM)
    return tmp_path


def replay(workdir: Path, **params: Any) -> RunResult:
    """The replay probe through the service's runner, as a job or a gate run would run it."""
    return run_probe(ProbeRequest(probe="replay", params=params), workdir=workdir / "run")


def observations(result: RunResult) -> dict[str, Any]:
    return result.cases[0].observations


def test_the_same_program_twice_is_clean(program: Path) -> None:
    result = replay(program, entry="tinynet:marked", cwd=str(program), processes=2)
    assert result.outcome is Outcome.CLEAN, result.message
    assert result.findings == []
    obs = observations(result)
    assert obs["steps"] == [3, 3] and obs["records"][0] == obs["records"][1] > 0
    growth = obs["comparisons"][0]["growth"]
    assert [row["diverging"] for row in growth] == [0, 0, 0] and growth[0]["tensors"] > 0
    assert obs["digest_paths"] == [{}, {}] and "digest_note" not in obs  # CPU tensors: digested at once


def test_planted_nondeterminism_names_the_layer_and_step(program: Path) -> None:
    result = replay(program, entry="tinynet:noisy", cwd=str(program), processes=3)
    assert result.outcome is Outcome.FINDINGS, result.message
    divergence = [f for f in result.findings if f.kind == "replay-divergence"]
    assert len(divergence) == 1
    finding = divergence[0]
    assert finding.signature == "replay|middle|output|forward"
    assert finding.seen == "2/2" and finding.evidence.value == "reproduced"
    assert "step 1 forward middle output (float32 32x16)" in finding.message
    diff = observations(result)["first_divergence_diff"]
    assert diff["elements"] == 512 and diff["differing"] > 400
    assert 0 < diff["max_abs_diff"] < 1e-4 and diff["max_rel_diff"] > 0
    # Everything downstream diverges too: the growth table counts it in every step.
    growth = observations(result)["comparisons"][0]["growth"]
    assert all(row["diverging"] > 0 for row in growth) and len(growth) == 3
    assert (program / "run" / "replay-growth.svg").read_text().lstrip().startswith("<?xml")


def test_a_divergence_in_process_0_alone_says_so_and_that_the_capture_did_not_see_it_again(program: Path) -> None:
    result = replay(program, entry="tinynet:noisy_once", cwd=str(program), processes=3)
    assert result.outcome is Outcome.FINDINGS, result.message
    [finding] = [f for f in result.findings if f.kind == "replay-divergence"]
    assert finding.signature == "replay|middle|output|forward" and finding.seen == "2/2"
    assert "processes 1, 2 agree with one another: process 0 is the one that differs, 1 of 3 processes" in (
        finding.message
    )
    assert "the capture re-run's two processes agreed at this tensor: it did not recur" in finding.message
    obs = observations(result)
    assert obs["agreeing_processes"] == [[0], [1, 2]]
    assert obs["first_divergence_diff"]["differing"] == 0
    assert "did not run with the same settings" not in finding.message  # same threads, CPUs and SIMD level
    assert len({str(host) for host in obs["hosts"]}) == 1 and obs["hosts"][0]["threads"] >= 1


def test_a_divergence_where_the_thread_counts_differ_names_them(program: Path) -> None:
    result = replay(program, entry="tinynet:noisy_once_other_threads", cwd=str(program), processes=2, capture=False)
    [finding] = [f for f in result.findings if f.kind == "replay-divergence"]
    threads = torch.get_num_threads()
    assert f"threads {threads + 1} in process 0, {threads} in process 1" in finding.message, finding.message
    assert "OMP_NUM_THREADS" in finding.message
    assert "agree with one another" not in finding.message  # two processes: no majority to name


def test_a_divergence_that_goes_away_with_pinned_threads_and_deterministic_algorithms_is_labelled_so(
    program: Path,
) -> None:
    result = replay(
        program, entry="tinynet:noisy_unless_pinned", cwd=str(program), processes=2, capture=False, second_opinion=True
    )
    assert result.outcome is Outcome.FINDINGS, result.message
    [finding] = [f for f in result.findings if f.kind == "replay-divergence"]
    said = "goes away with pinned threads (1 intra-op, 1 inter-op, no dynamic threading) and "
    assert said + "torch.use_deterministic_algorithms(True)" in finding.message, finding.message
    assert observations(result)["second_opinion"].startswith("goes away")


def test_a_divergence_that_stays_with_pinned_threads_is_labelled_so(program: Path) -> None:
    result = replay(program, entry="tinynet:noisy", cwd=str(program), processes=2, capture=False, second_opinion=True)
    [finding] = [f for f in result.findings if f.kind == "replay-divergence"]
    assert "persists with pinned threads" in finding.message, finding.message


@pytest.mark.parametrize("output_grads", ["none", "retain"])
def test_a_divergence_born_in_backward_is_named_there_and_says_how_to_localise_it(
    program: Path, output_grads: str
) -> None:
    result = replay(
        program, entry="tinynet:noisy_backward", cwd=str(program), processes=2, capture=False, output_grads=output_grads
    )
    assert result.outcome is Outcome.FINDINGS, result.message
    [finding] = [f for f in result.findings if f.kind == "replay-divergence"]
    # The forward is the same in every process: the first difference is in backward, below the planted module.
    if output_grads == "none":  # the default: seen through the first parameter gradient it reaches
        assert finding.signature == "replay|fc1|weight.grad|backward", finding.message
        assert 'run again with output_grads "retain"' in finding.message
    else:  # module outputs' gradients: the gradient that left the planted module, at the output it flows into
        assert finding.signature == "replay|fc1|grad_output|backward", finding.message
        assert "retain" not in finding.message
    assert "step 1 backward fc1" in finding.message


def test_planted_overflow_is_named_before_the_loss_goes_non_finite(program: Path) -> None:
    result = replay(program, entry="tinynet:overflow", cwd=str(program), processes=2, capture=False)
    assert result.outcome is Outcome.FINDINGS, result.message
    [watch] = [f for f in result.findings if f.kind == "replay-magnitude"]
    assert watch.signature == "replay-magnitude|middle|output|forward" and watch.seen == "2/2"
    assert "step 2 forward middle output" in watch.message and "threshold 1e+06" in watch.message
    assert "first non-finite tensor came later" in watch.message
    magnitude = observations(result)["magnitude"]
    over, nonfinite = magnitude["first_over"][0], magnitude["first_nonfinite"][0]
    assert over["step"] == 2 and nonfinite["step"] > over["step"]
    assert not any(f.kind == "replay-divergence" for f in result.findings)  # deterministic, only huge


@pytest.mark.parametrize(
    "params, reason",
    [
        ({"entry": "no_such_module:main"}, "module 'no_such_module' not found"),
        ({"entry": "tinynet:missing"}, "has no callable 'missing'"),
        ({"entry": "tinynet:raises"}, "raised ValueError: planted failure in the user's program"),
        ({"entry": "tinynet:no_step"}, "never reached a step boundary"),
        ({"script": ["does-not-exist.py"]}, "does-not-exist.py' does not exist"),
    ],
)
def test_a_program_that_cannot_be_replayed_is_probe_error(
    program: Path, params: dict[str, Any], reason: str
) -> None:
    result = replay(program, cwd=str(program), processes=2, **params)
    assert result.outcome is Outcome.PROBE_ERROR
    assert reason in result.message and "process 0" in result.message


def test_a_script_with_arguments_runs_as_main(program: Path) -> None:
    script = program / "train.py"
    script.write_text("import sys\nimport tinynet\n\nassert sys.argv[1:] == ['--steps', '3']\ntinynet.marked()\n")
    result = replay(program, script=[str(script), "--steps", "3"], cwd=str(program), processes=2)
    assert result.outcome is Outcome.CLEAN, result.message


def test_at_most_one_program_and_none_means_the_built_in_example(program: Path) -> None:
    from cuprobe.probes.replay.probe import ReplayParams
    from cuprobe.service.probing.admission import BadRequest

    with pytest.raises(BadRequest, match="exactly one of entry, script or example"):
        replay(program, entry="tinynet:marked", example="transformer")
    assert ReplayParams().example == "transformer"
    assert ReplayParams(entry="tinynet:marked").example is None


def test_digest_is_exact_in_any_summation_order_and_sees_one_ulp() -> None:
    x = torch.randn(1000, dtype=torch.float32)
    assert bits_hash(x) == bits_hash(x.flip(0).flip(0).clone())
    y = x.clone()
    y[500] = torch.nextafter(y[500], torch.tensor(float("inf")))
    assert bits_hash(y) != bits_hash(x)
    odd = torch.randn(7, dtype=torch.bfloat16)[1:]  # offset storage, 2-byte elements
    assert bits_hash(odd) == bits_hash(odd.clone())


def test_tensor_diff_counts_bits_and_gaps() -> None:
    a = torch.tensor([1.0, 2.0, 0.0, 4.0])
    b = torch.tensor([1.0, 2.5, -0.0, 4.0])
    assert tensor_diff(a, b) == {"elements": 4, "differing": 2, "max_abs_diff": 0.5, "max_rel_diff": 0.2}


def _record(i: int, module: str, digest: int, step: int = 1) -> dict[str, Any]:
    return {"index": i, "step": step, "phase": "forward", "module": module, "role": "output",
            "shape": [2], "dtype": "float32", "digest": digest, "magnitude": 1.0}


def test_a_different_sequence_of_tensors_is_a_structural_divergence() -> None:
    ref = [_record(0, "a", 1), _record(1, "b", 2)]
    assert first_divergence(ref, ref) is None
    other = [_record(0, "a", 1), _record(1, "c", 2)]
    found = first_divergence(ref, other)
    assert found is not None
    assert (found.kind, found.index, found.signature()) == ("structure", 1, "replay|b|output|forward")
    shorter = first_divergence(ref, ref[:1])
    assert shorter is not None and (shorter.kind, shorter.index) == ("structure", 1)


def _tuner(kernel: str, choices: dict[str, str], cache_results: bool = False) -> dict[str, Any]:
    return {"kernel": kernel, "choices": choices, "benchmarked": True, "cache_results": cache_results}


def test_autotune_choices_that_differ_per_process_are_listed_by_key() -> None:
    # Planted: the split-K kernel picks SPLIT_K 4 in process 1 at one of two keys (A1).
    same = {"(256, 256, 8192)": "SPLIT_K: 1", "(128, 128, 4096)": "SPLIT_K: 2"}
    other = {"(256, 256, 8192)": "SPLIT_K: 4", "(128, 128, 4096)": "SPLIT_K: 2"}
    processes = [[_tuner("_splitk_kernel", same)], [_tuner("_splitk_kernel", same)], [_tuner("_splitk_kernel", other)]]
    assert autotune_diff(processes) == [
        {"kernel": "_splitk_kernel", "key": "(256, 256, 8192)", "configs": ["SPLIT_K: 1", "SPLIT_K: 1", "SPLIT_K: 4"]}
    ]
    assert autotune_diff(processes[:2]) == []
    missing = autotune_diff([[_tuner("k", {"(1,)": "A"})], []])
    assert missing == [{"kernel": "k", "key": "(1,)", "configs": ["A", None]}]


def test_a_persistent_autotune_cache_that_stays_empty_is_a_problem() -> None:
    tuned = [_tuner("_splitk_kernel", {"(256, 256, 8192)": "SPLIT_K: 1"}, cache_results=True)]
    problem = autotune_cache_problem(tuned, persistent_env=False, files=[])
    assert problem is not None and "_splitk_kernel" in problem and "stayed empty" in problem
    assert autotune_cache_problem(tuned, persistent_env=False, files=["x/_splitk_kernel.autotune.json"]) is None
    not_persistent = [_tuner("_splitk_kernel", {"(1,)": "A"})]
    assert autotune_cache_problem(not_persistent, persistent_env=False, files=[]) is None
    assert autotune_cache_problem(not_persistent, persistent_env=True, files=[]) is not None
    assert autotune_cache_problem([_tuner("k", {})], persistent_env=True, files=[]) is None  # never tuned


def test_a_process_whose_triton_kernel_failed_says_so_and_stays_clean() -> None:
    # Reports as replay's children write them: one process gave the kernel up after its first batch.
    reports = [
        {"digest_paths": {"kernel": 7}, "triton_failed": None},
        {"digest_paths": {"kernel": 1, "staging": 6}, "triton_failed": "CompilationError: ptxas failed"},
    ]
    case = CaseResult(id="replay")
    judge_digest_paths(case, reports)
    assert case.observations["digest_paths"] == [{"kernel": 7}, {"kernel": 1, "staging": 6}]
    note = case.observations["digest_note"]
    assert "process 1" in note and "CompilationError: ptxas failed" in note and "staging" in note
    assert case.findings == []
