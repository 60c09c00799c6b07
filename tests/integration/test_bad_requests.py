"""Bad requests get a 4xx whose message names the problem, and store nothing."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import func, select

from cuprobe.service.api import create_app
from cuprobe.service.db.store import Job
from tests.integration.stack import Stack

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def guarded(sqlite_stack: Stack) -> Iterator[httpx.Client]:
    """The SQLite stack's API again, this time with a bearer token configured."""
    client = sqlite_stack.start_api(api_token=TOKEN)
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    yield client


def _jobs(stack: Stack) -> int:
    with stack.store.session() as s:
        return int(s.scalar(select(func.count()).select_from(Job)) or 0)


@pytest.mark.parametrize(
    ("body", "status", "field", "says"),
    [
        ({"probe": "selftest", "timeout_s": "soon"}, 422, "timeout_s", "valid number"),
        ({"probe": "selftest", "params": []}, 422, "params", "dictionary"),
        ({"probe": 7}, 422, "probe", "string"),
        ({"probe": "no-such-probe"}, 422, "probe", "unknown probe 'no-such-probe'"),
        ({"probe": "selftest", "params": {"behaviour": "dance"}}, 422, "params.behaviour", "'dance' is not one of ok"),
        ({"probe": "selftest", "params": {"seconds": -1}}, 422, "params.seconds", "greater than or equal"),
        ({"probe": "determinism", "tool": "memcheck"}, 422, "tool", "runs under none"),
        ({"probe": "selftest", "colour": "red"}, 422, "colour", "Extra inputs"),
        ({"probe": "uninit-read", "arch": "hopper"}, 422, "arch", "pattern"),
        ({"probe": "selftest", "timeout_s": 100_000}, 422, "timeout_s", "less than or equal"),
        ({"probe": "command"}, 403, "probe", "command probe is off on this server"),
        # the example's working directory is on its PYTHONPATH (a sitecustomize.py there would run)
        ({"probe": "replay", "params": {"cwd": "/tmp"}}, 403, "probe", "CUPROBE_REPLAY_PROBE_ENABLED"),
        ({"probe": "replay", "params": {"triton_cache_dir": "/tmp/c"}}, 403, "probe", "CUPROBE_REPLAY_PROBE_ENABLED"),
    ],
)
def test_bad_body_is_refused_naming_the_field(
    sqlite_stack: Stack, guarded: httpx.Client, body: dict, status: int, field: str, says: str
) -> None:
    before = _jobs(sqlite_stack)
    response = guarded.post("/jobs", json=body)
    assert response.status_code == status, response.text
    error = response.json()
    assert error["schema_version"] == 1 and error["field"] == field
    assert says in error["error"] and field in error["error"]
    assert _jobs(sqlite_stack) == before


def test_malformed_json_and_oversized_bodies(sqlite_stack: Stack, guarded: httpx.Client) -> None:
    before = _jobs(sqlite_stack)
    response = guarded.post("/jobs", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 422 and "JSON" in response.json()["error"]
    response = guarded.post("/jobs", content=b'{"probe": selftest}', headers={"content-type": "application/json"})
    error = response.json()  # the field is the body, and the decoder's reason and position are kept
    assert (response.status_code, error["field"]) == (422, "body")
    assert error["error"] == "invalid request: body: not valid JSON: Expecting value at character 10"
    for content, says in (
        (b'{"probe": "self\xfftest"}', "not UTF-8: byte 0xff at position 15"),
        (b"[" * 20_000 + b"]" * 20_000, "nested too deeply"),
    ):
        response = guarded.post("/jobs", content=content, headers={"content-type": "application/json"})
        assert (response.status_code, response.json()["field"]) == (422, "body"), response.text
        assert response.json()["error"] == f"invalid request: body: not valid JSON: {says}"
    response = guarded.post("/jobs", content=b'{"probe": "selftest"}', headers={"content-type": "text/plain"})
    assert (response.status_code, response.json()["field"]) == (422, "body")
    assert "content-type application/json (content-type was text/plain)" in response.json()["error"]
    big = b'{"probe": "selftest", "params": {"x": "' + b"a" * 200_000 + b'"}}'
    response = guarded.post("/jobs", content=big, headers={"content-type": "application/json"})
    assert response.status_code == 413 and "larger than" in response.json()["error"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the cap is enforced while reading
        yield big[:100]
        yield big[100:]

    response = guarded.post("/jobs", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert _jobs(sqlite_stack) == before


def test_missing_or_wrong_token_is_401(sqlite_stack: Stack, guarded: httpx.Client) -> None:
    before = _jobs(sqlite_stack)
    body = {"probe": "selftest"}
    anonymous = httpx.Client(base_url=guarded.base_url)
    missing = anonymous.post("/jobs", json=body)
    assert missing.status_code == 401 and "missing bearer token" in missing.json()["error"]
    wrong = anonymous.post("/jobs", json=body, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and "wrong bearer token" in wrong.json()["error"]
    assert anonymous.get("/jobs").status_code == 401
    assert anonymous.get("/health").status_code == 200  # health stays open for probes and load balancers
    brief = set(anonymous.get("/health").json())  # but says only whether it is well without the token
    assert set(anonymous.get("/health", headers={"Authorization": "Bearer nope"}).json()) == brief
    assert set(anonymous.get("/health", headers={"Authorization": "Basic x"}).json()) == brief
    assert len(set(guarded.get("/health").json())) > len(brief)
    # Without the token nothing about the request is judged first: not its JSON, its size or its values.
    for method, path, content in (
        ("POST", "/jobs", b"{bad"),
        ("POST", "/jobs", b"x" * (1 << 20)),
        ("POST", "/jobs/wait", b'{"ids": []}'),
        ("GET", "/jobs/zzz?wait_s=-1", b""),
        ("GET", "/sweeps", b""),
    ):
        refused = anonymous.request(method, path, content=content, headers={"content-type": "application/json"})
        assert refused.status_code == 401 and "missing bearer token" in refused.json()["error"], (path, refused.text)
        assert refused.headers["www-authenticate"] == "Bearer"
    assert guarded.post("/jobs", content=b"{bad", headers={"content-type": "application/json"}).status_code == 422
    assert _jobs(sqlite_stack) == before
    assert guarded.get("/jobs/ffff").status_code == 404


def test_a_lone_surrogate_is_refused_before_anything_is_stored(sqlite_stack: Stack) -> None:
    """JSON can spell a string that is not valid Unicode (`\\ud800`); stored, it made every listing that held the job
    fail. It is refused, naming the field, and the job list still answers."""
    client = sqlite_stack.start_api(api_token=TOKEN, command_enabled=True)
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    before = _jobs(sqlite_stack)
    for body, field in (
        (b'{"probe": "command", "params": {"argv": ["/bin/true", "a\\ud800"]}}', "params.argv.1"),
        (b'{"probe": "command", "params": {"argv": ["/bin/true"], "env": {"X": "\\udfff"}}}', "params.env.X"),
    ):
        response = client.post("/jobs", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 422, response.text
        assert response.json()["field"] == field and "lone surrogate" in response.json()["error"]
    assert _jobs(sqlite_stack) == before
    assert client.get("/jobs").status_code == 200


@pytest.mark.parametrize("switch", ["command_enabled", "replay_probe_enabled"])
def test_a_probe_that_runs_code_enabled_without_token_refuses_to_start(sqlite_stack: Stack, switch: str) -> None:
    settings = sqlite_stack.settings.model_copy(update={switch: True, "api_token": None})
    with pytest.raises(ValueError, match="CUPROBE_API_TOKEN"):
        create_app(settings)


def test_a_number_that_is_not_finite_is_named_as_such(guarded: httpx.Client) -> None:
    """NaN compares false with every bound, so it read as 'less than or equal to 3600 (got nan)'."""
    for raw in (b"NaN", b"Infinity"):
        response = guarded.post(
            "/jobs",
            content=b'{"probe": "selftest", "params": {"seconds": ' + raw + b"}}",
            headers={"content-type": "application/json"},
        )
        assert response.status_code == 422, response.text
        assert "params.seconds" in response.json()["error"] and "takes a finite number" in response.json()["error"]
