"""A store full of synthetic history: jobs of every probe and outcome with findings, gate runs and sweeps.

The dashboard's tests, its screenshots (docs/tools/screenshots.py) and its benchmark (bench/dashboard.py) read it.
Signatures, kernels and files are the shapes real runs produce (the captures under tests/data); counts, times and
outcomes are drawn from a seeded random generator: nothing here is a measurement.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert

from cuprobe.service.db.store import FindingRow, Job, Run, Store
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.models import Confirmation, ConfirmationEvidence, Finding, Outcome, Tool, signature_key
from cuprobe.service.models.queues import gate_label
from cuprobe.service.models.sweep import ProcessRecord, Sweep, SweepCase

ENVIRONMENT = {
    "gpu": "NVIDIA H200",
    "gpu_uuid": "GPU-5f0c2a51-8f3e-4b0e-9d1c-4a8e2b7c9d10",
    "driver": "580.159.04",
    "cuda": "13.0",
    "sanitizer": "2026.4.0.0",
    "torch": "2.13.0",
    "python": "3.12.3",
    "cuprobe": "0.1.0",
}
HOST_FRAMES = [
    "pycuda::function::launch_kernel (_driver.cpython-312-x86_64-linux-gnu.so)",
    "cuprobe probe main (probes/__main__.py)",
]
NARROW_N = [1, 2, 3, 5, 8, 16, 17, 31, 33, 48, 63, 64, 96]


def _finding(signature: str, **fields: Any) -> Finding:
    tool, kind = signature.split("|")[:2]
    return Finding(signature=signature, tool=Tool(tool), kind=kind, **fields)


def narrow(n: int, variant: str = "unguarded") -> Finding:
    """narrow-matmul's tile load past the written rows: records grow with the unwritten part of the last tile."""
    return _finding(
        "initcheck|uninitialized-global-read|tiled_matmul|kernels/narrow_matmul.cu:23|global-read-4",
        message="Uninitialized __global__ memory read of size 4 bytes",
        kernel="tiled_matmul",
        file="kernels/narrow_matmul.cu",
        line=23,
        pc="0x2c0",
        space="__global__",
        access="read",
        size=4,
        count=32 * (32 - n % 32) * max(1, 32 // 8),
        threads={"x": [0, 31], "y": [n % 32, 31], "z": [0, 0]},
        blocks={"x": [0, max(0, (n - 1) // 32)], "y": [0, 0], "z": [0, 0]},
        addresses=["0x7efb1a401100", "0x7efb1a401104", "0x7efb1a401108"],
        host_frames=HOST_FRAMES,
        device_frames=[f"narrow_matmul_{variant}_f32 kernels/narrow_matmul.cu:37"],
        case=f"{variant}-n{n}",
        confirmation=Confirmation.BENIGN,
        confirmation_evidence=ConfirmationEvidence(
            reason="never written, masked out: the result is bit-identical under 0xFF and zero poison",
            digests={"poison-ff": "9c1e0d4b", "poison-00": "9c1e0d4b"},
            max_diff=0.0,
            differing=0,
        ),
    )


TEMPLATES: dict[str, tuple[Tool, list[Finding]]] = {
    "uninit-read": (
        Tool.INITCHECK,
        [
            _finding(
                "initcheck|uninitialized-global-read|double_all|kernels/uninit_read.cu:6|global-read-4",
                message="Uninitialized __global__ memory read of size 4 bytes",
                kernel="double_all",
                file="kernels/uninit_read.cu",
                line=6,
                space="__global__",
                access="read",
                size=4,
                count=24,
                device_frames=["double_all kernels/uninit_read.cu:6"],
                host_frames=HOST_FRAMES,
                case="uninit",
                confirmation=Confirmation.CONSEQUENTIAL,
                confirmation_evidence=ConfirmationEvidence(
                    reason="the result changes between 0xFF and zero poison: 24 elements differ",
                    max_diff=float("3.4e38"),
                    differing=24,
                    where="dst[1000]: -nan vs 0",
                ),
            )
        ],
    ),
    "planted-memcheck": (
        Tool.MEMCHECK,
        [
            _finding(
                "memcheck|invalid-global-write|oob_write|kernels/planted.cu:8|global-write-4|out of bounds",
                message="Invalid __global__ write of size 4 bytes: Access is out of bounds",
                kernel="oob_write",
                file="kernels/planted.cu",
                line=8,
                space="__global__",
                access="write",
                size=4,
                count=1,
                device_frames=["oob_write kernels/planted.cu:8"],
                host_frames=HOST_FRAMES,
                case="oob",
            ),
            _finding(
                "memcheck|api-error|-|-|cudaDeviceSynchronize:cudaErrorLaunchFailure|@main",
                message='Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure"',
                count=1,
                case="oob",
                fallout=True,
            ),
        ],
    ),
    "planted-racecheck": (
        Tool.RACECHECK,
        [
            _finding(
                "racecheck|shared-memory-race|racy_reduce|kernels/planted.cu:20|vs kernels/planted.cu:20"
                "|shared-Write|RAW",
                message="Potential RAW hazard detected",
                kernel="racy_reduce",
                file="kernels/planted.cu",
                line=20,
                space="shared",
                access="Write",
                count=384,
                hazards=384,
                case="race",
            )
        ],
    ),
    "planted-synccheck": (
        Tool.SYNCCHECK,
        [
            _finding(
                "synccheck|barrier-error-invalid-arguments|bad_syncwarp|kernels/planted.cu:33|Invalid arguments",
                message="Barrier error detected. Invalid arguments",
                kernel="bad_syncwarp",
                file="kernels/planted.cu",
                line=33,
                count=32,
                case="syncwarp",
            )
        ],
    ),
    "bf16-matmul": (
        Tool.INITCHECK,
        [
            _finding(
                "initcheck|uninitialized-global-read|unrolled_elementwise_kernel|pc0x870|global-read-2",
                message="Uninitialized __global__ memory read of size 2 bytes",
                kernel="unrolled_elementwise_kernel",
                pc="0x870",
                space="__global__",
                access="read",
                size=2,
                count=65536,
                library=True,
                case="torch-cuda-256",
                confirmation=Confirmation.BLIND_SPOT,
                confirmation_evidence=ConfirmationEvidence(
                    reason="the sentinel placed in every fresh allocation is gone before the reading kernel: written "
                    "by a path initcheck does not see (cuBLAS bf16 GEMM)",
                    flagged_elements=65536,
                    surviving_elements=0,
                ),
            )
        ],
    ),
}
PROBE_TOOL = {
    "narrow-matmul": Tool.INITCHECK,
    "uninit-read": Tool.INITCHECK,
    "planted-memcheck": Tool.MEMCHECK,
    "planted-racecheck": Tool.RACECHECK,
    "planted-synccheck": Tool.SYNCCHECK,
    "bf16-matmul": Tool.INITCHECK,
    "selftest": Tool.NONE,
    "determinism": Tool.NONE,
    "command": Tool.MEMCHECK,
}
WEIGHTS = {
    "narrow-matmul": 14,
    "uninit-read": 8,
    "planted-memcheck": 6,
    "planted-racecheck": 5,
    "planted-synccheck": 4,
    "bf16-matmul": 6,
    "selftest": 10,
    "determinism": 8,
    "command": 20,
}
NOT_RUN = {
    Outcome.UNAVAILABLE: "no worker serves queue gpu.sm90: start one with `cuprobe worker` on a GPU machine",
    Outcome.TIMEOUT: "wall-clock limit of 600 s reached; the whole process group was killed",
    Outcome.PROBE_ERROR: "the probe exited 1 without sanitizer records: ModuleNotFoundError: No module named 'triton'",
    Outcome.SANITIZER_ERROR: "compute-sanitizer printed no summary line: the run is not clean",
}


def own_code(index: int) -> Finding:
    """A finding in the user's own tests: a long tail of distinct signatures."""
    op, line = index % 250, 40 + (index * 7) % 300
    return _finding(
        f"memcheck|invalid-global-read|op{op}_kernel|src/ops/op{op}.cu:{line}|global-read-4|out of bounds",
        message="Invalid __global__ read of size 4 bytes: Access is out of bounds",
        kernel=f"op{op}_kernel",
        file=f"src/ops/op{op}.cu",
        line=line,
        space="__global__",
        access="read",
        size=4,
        count=1 + index % 17,
        case=f"tests/test_op{op}.py::test_shapes[{index % 9}]",
    )


@dataclass
class Seeded:
    """What was written: job ids newest first, sweep ids oldest first, and finding keys worth opening."""

    jobs: list[str] = field(default_factory=list)
    findings: int = 0
    sweeps: list[str] = field(default_factory=list)
    hot_key: str = ""
    rare_key: str = ""
    job_with_findings: str = ""
    gate_labels: list[str] = field(default_factory=list)


def _params(probe: str, rng: random.Random) -> dict[str, Any]:
    if probe == "narrow-matmul":
        return {"n": rng.sample(NARROW_N, 5), "variants": ["unguarded", "guarded"]}
    if probe == "selftest":
        return {"behaviour": "ok"}
    if probe == "bf16-matmul":
        return {"backends": ["torch-cuda"]}
    if probe == "command":
        return {"argv": ["python", "-m", "pytest", "tests/test_ops.py"]}
    return {}


def _findings_of(probe: str, params: dict[str, Any], rng: random.Random, index: int) -> list[Finding]:
    if probe == "narrow-matmul":
        return [narrow(n) for n in params["n"] if n % 32]
    if probe in TEMPLATES:
        return list(TEMPLATES[probe][1])
    if probe == "command":
        return [own_code(rng.randrange(0, 2000) if rng.random() < 0.8 else index) for _ in range(rng.randint(1, 25))]
    if probe == "selftest" and rng.random() < 0.3:
        return [_finding("none|expectation-violation|selftest|violate", message="selftest: expectation violated")]
    return []


def _job_row(
    probe: str, at: datetime, rng: random.Random, outcome: Outcome | None, state: str, label: str | None, n: int
) -> tuple[dict[str, Any], list[Finding]]:
    tool = PROBE_TOOL[probe]
    name = "planted" if probe.startswith("planted") else probe
    params = _params(probe, rng)
    findings = _findings_of(probe, params, rng, n) if outcome is Outcome.FINDINGS else []
    if outcome is Outcome.FINDINGS and not findings:
        outcome = Outcome.CLEAN
    took = timedelta(seconds=round(rng.uniform(1.5, 90.0), 1))
    started = at + timedelta(seconds=rng.uniform(0.1, 5.0)) if state != "queued" else None
    finished = started + took if started and state == "done" else None
    gpu = name not in ("selftest", "determinism")
    message = (
        f"{len(findings)} finding(s)"
        if outcome is Outcome.FINDINGS
        else NOT_RUN.get(outcome, "clean: the run completed with no records")
        if outcome
        else "running"
        if state == "running"
        else "queued"
    )
    job_id = uuid.UUID(int=rng.getrandbits(128)).hex
    result = None
    if state == "done" and outcome is not None:
        result = {
            "schema_version": 1,
            "probe": name,
            "tool": tool.value,
            "params": params,
            "outcome": outcome.value,
            "message": message,
            "records": sum(f.count for f in findings),
            "sanitizer_version": ENVIRONMENT["sanitizer"] if tool is not Tool.NONE else None,
            "environment": ENVIRONMENT if gpu else {k: ENVIRONMENT[k] for k in ("python", "torch", "cuprobe")},
            "command": ["compute-sanitizer", "--tool", tool.value, "--xml", "--save", "run.xml", "--", "python3",
                        "-m", "cuprobe.probes", name, "--params", json.dumps(params)] if tool is not Tool.NONE
            else ["python3", "-m", "cuprobe.probes", name, "--params", json.dumps(params)],
            "duration_s": took.total_seconds(),
        }
    row = {
        "id": job_id,
        "probe": name,
        "tool": tool.value,
        "request": {"probe": name, "tool": tool.value, "params": params, "lane": "gate", "label": label},
        "queue": "gpu.sm90" if gpu else "cpu",
        "lane": "gate",
        "label": label,
        "state": state,
        "outcome": outcome.value if outcome and state == "done" else None,
        "message": message,
        "created_at": at,
        "deadline_at": at + timedelta(hours=1),
        "enqueued_at": at,
        "started_at": started,
        "finished_at": finished,
        "heartbeat_at": started,
        "attempts": 1 if started else 0,
        "enqueues": 1,
        "cancel_requested": False,
        "worker": f"h200-box:{4100 + rng.randrange(8)}" if started else None,
        "result": result,
    }
    return row, findings


def _outcome(rng: random.Random) -> Outcome:
    roll = rng.random()
    if roll < 0.5:
        return Outcome.FINDINGS
    if roll < 0.9:
        return Outcome.CLEAN
    return rng.choice(list(NOT_RUN))


def _chunks(rows: list[dict[str, Any]], size: int = 2000) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def seed_jobs(
    store: Store,
    *,
    jobs: int,
    findings: int | None = None,
    days: float = 14,
    now: datetime | None = None,
    seed: int = 7,
    active: int = 0,
    gate_runs: int = 3,
    artifacts: Path | None = None,
) -> Seeded:
    """`jobs` finished jobs spread over the last `days` (plus `active` queued or running ones, newest), and exactly
    `findings` finding rows when given; gate runs label their jobs as `cuprobe gate` does."""
    rng = random.Random(seed)
    now = now or datetime.now(UTC)
    probes, weights = list(WEIGHTS), list(WEIGHTS.values())
    out = Seeded()
    job_rows, finding_rows = [], []
    span = timedelta(days=days).total_seconds()
    times = sorted((now - timedelta(seconds=rng.uniform(60, span)) for _ in range(jobs)), reverse=True)
    gates = [(gate_label("premerge", f"{rng.getrandbits(32):08x}"), i) for i in range(gate_runs)]
    for n, at in enumerate(times):
        label = None
        for gate, index in gates:
            if n // 12 == index * 3 + 1:  # a dozen neighbouring jobs per gate run, apart from each other
                label = gate
        probe = rng.choices(probes, weights)[0]
        row, found = _job_row(probe, at, rng, _outcome(rng), "done", label, n)
        job_rows.append(row)
        finding_rows += [(row["id"], f) for f in found]
    for n in range(active):
        probe = rng.choice(["narrow-matmul", "uninit-read", "selftest", "determinism"])
        state = "running" if n % 2 == 0 else "queued"
        row, _ = _job_row(probe, now - timedelta(seconds=20 + 15 * n), rng, None, state, None, jobs + n)
        job_rows.insert(0, row)
    if findings is not None:
        finding_rows = _exactly(finding_rows, findings, [r for r in job_rows if r["outcome"] == "findings"], rng)
    _write(store, job_rows, finding_rows, artifacts)
    out.jobs = [r["id"] for r in job_rows]
    out.findings = len(finding_rows)
    out.gate_labels = [g for g, _ in gates]
    by_key: dict[str, int] = {}
    for _, f in finding_rows:
        by_key[signature_key(f.signature)] = by_key.get(signature_key(f.signature), 0) + 1
    ranked = sorted(by_key, key=lambda k: by_key[k])
    out.hot_key, out.rare_key = (ranked[-1], ranked[0]) if ranked else ("", "")
    out.job_with_findings = next(
        (r["id"] for r in job_rows if r["probe"] == "narrow-matmul" and r["outcome"] == "findings"), ""
    )
    return out


def _exactly(
    rows: list[tuple[str, Finding]], target: int, holders: list[dict[str, Any]], rng: random.Random
) -> list[tuple[str, Finding]]:
    """Trim or pad to `target` rows; padding adds the user's own-code findings to jobs that have findings."""
    rows = rows[:target]
    seen = {(j, f.signature, f.case or "") for j, f in rows}
    index = 0
    while len(rows) < target:
        job = rng.choice(holders)["id"]
        finding = own_code(index)
        index += 1
        if (job, finding.signature, finding.case or "") not in seen:
            seen.add((job, finding.signature, finding.case or ""))
            rows.append((job, finding))
    return rows


def _write(
    store: Store, job_rows: list[dict[str, Any]], finding_rows: list[tuple[str, Finding]], artifacts: Path | None
) -> None:
    unique: dict[tuple[str, str, str], dict[str, Any]] = {}
    for job_id, f in finding_rows:
        unique.setdefault(
            (job_id, f.signature, f.case or ""),
            {
                "job_id": job_id,
                "signature": f.signature,
                "signature_key": signature_key(f.signature),
                "tool": f.tool.value,
                "kind": f.kind,
                "case_id": f.case or "",
                "count": f.count,
                "finding": f.model_dump(mode="json"),
            },
        )
    run_rows = []
    for row in job_rows:
        if row["started_at"] is None:
            continue
        workdir = (artifacts / row["id"] / "1") if artifacts else Path("/nonexistent") / row["id"]
        run_rows.append(
            {
                "job_id": row["id"],
                "attempt": 1,
                "worker": row["worker"],
                "workdir": str(workdir),
                "started_at": row["started_at"],
                "finished_at": row["finished_at"],
                "outcome": row["outcome"],
            }
        )
    with store.session() as s:
        for chunk in _chunks(job_rows):
            s.execute(insert(Job), chunk)
        for chunk in _chunks(run_rows):
            s.execute(insert(Run), chunk)
        for chunk in _chunks(list(unique.values())):
            s.execute(insert(FindingRow), chunk)
    if artifacts:
        for row in job_rows[:40]:
            if row["result"]:
                workdir = artifacts / row["id"] / "1"
                workdir.mkdir(parents=True, exist_ok=True)
                (workdir / "result.json").write_text(json.dumps({**row["result"], "complete": True}, indent=1))
                (workdir / "stdout.txt").write_text(f"{row['probe']}: {row['message']}\n")


def _sweep_cases(rng: random.Random, index: int, cases: int) -> tuple[list[SweepCase], list[ProcessRecord]]:
    """A nightly-like grid: narrow-matmul under initcheck batched, the planted controls, own-code tests."""
    out: list[SweepCase] = []
    grid = [(n, v) for v in ("unguarded", "guarded") for n in NARROW_N]
    for n, variant in grid:
        findings = [narrow(n, variant)] if variant == "unguarded" and n % 32 else []
        findings = [f.model_copy(update={"case": f"{variant}-n{n}"}) for f in findings]
        out.append(
            SweepCase(
                key=f"narrow-matmul/initcheck/n={n}/variants={variant}",
                entry="narrow",
                probe="narrow-matmul",
                tool=Tool.INITCHECK,
                point={"n": n, "variants": variant},
                probe_case=f"{variant}-n{n}",
                process=0,
                batched=True,
                outcome=Outcome.FINDINGS if findings else Outcome.CLEAN,
                outcomes=[Outcome.FINDINGS if findings else Outcome.CLEAN],
                findings=findings,
            )
        )
    for name in ("planted-memcheck", "planted-racecheck", "planted-synccheck", "uninit-read"):
        tool, templates = TEMPLATES[name]
        out.append(
            SweepCase(
                key=f"{name}/control",
                entry=name,
                probe=name.split("-")[0] if name.startswith("planted") else name,
                tool=tool,
                control=True,
                process=1,
                batched=False,
                reason="a positive control runs in a process of its own",
                outcome=Outcome.FINDINGS,
                outcomes=[Outcome.FINDINGS],
                findings=list(templates),  # with memcheck's fallout, which no diff counts
            )
        )
    tests = max(0, cases - len(out))
    for t in range(tests):
        # Own-code tests: a few findings come and go between sweeps (new, fixed), one is flaky, one cannot run.
        present = t % 5 == 0 or t in (6 + index, 8 + 2 * index)
        flaky = t == 3
        unavailable = t == 5 and index % 2 == 1
        finding = own_code(t).model_copy(update={"seen": "2/3" if flaky else "3/3"})
        outcome = Outcome.UNAVAILABLE if unavailable else Outcome.FINDINGS if present or flaky else Outcome.CLEAN
        out.append(
            SweepCase(
                key=f"tests/test_op{t}.py::test_shapes",
                entry="own-tests",
                probe="command",
                tool=Tool.MEMCHECK,
                point={"test": t},
                process=2 + t,
                batched=False,
                reason="a test runs in a process of its own",
                outcome=outcome,
                outcomes=[outcome] * 3,
                message=NOT_RUN[Outcome.UNAVAILABLE] if unavailable else "",
                flaky=flaky,
                findings=[finding] if (present or flaky) and not unavailable else [],
            )
        )
    processes = [
        ProcessRecord(index=0, probe="narrow-matmul", tool=Tool.INITCHECK, params={"n": NARROW_N}, batched=True,
                      cases=len(grid), control="uninit", control_fired=[True], outcomes=[Outcome.FINDINGS],
                      durations_s=[round(rng.uniform(8, 12), 1)]),
        ProcessRecord(index=1, probe="planted", tool=Tool.MEMCHECK, params={}, batched=False, cases=4,
                      reason="a positive control runs in a process of its own", outcomes=[Outcome.FINDINGS],
                      durations_s=[round(rng.uniform(2, 4), 1)]),
    ]
    return out, processes


def seed_sweeps(
    store: Store, *, sweeps: int, cases: int = 60, now: datetime | None = None, seed: int = 11, running: bool = False
) -> list[str]:
    """`sweeps` finished nightly sweeps a day apart (oldest first), and one running sweep when `running`."""
    rng = random.Random(seed)
    now = now or datetime.now(UTC)
    store_ = SweepStore(store)
    ids = []
    for index in range(sweeps):
        started = now - timedelta(days=sweeps - index, hours=-2)
        grid, processes = _sweep_cases(rng, index, cases)
        sweep = Sweep(
            id=uuid.UUID(int=rng.getrandbits(128)).hex,
            definition="nightly",
            state="done",
            started_at=started,
            finished_at=started + timedelta(minutes=rng.uniform(20, 50)),
            wall_s=round(rng.uniform(1200, 3000), 1),
            sanitizer_version=ENVIRONMENT["sanitizer"],
            driver=ENVIRONMENT["driver"],
            environment=ENVIRONMENT,
            processes=processes,
            cases=grid,
        )
        store_.save(sweep)
        ids.append(sweep.id)
    if running:
        sweep_id = uuid.UUID(int=rng.getrandbits(128)).hex
        store_.start(sweep_id, "nightly")
        store_.progress(sweep_id, 17, 42, "narrow-matmul/initcheck (26 case(s))")
        ids.append(sweep_id)
    return ids
