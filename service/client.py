"""A small HTTP client for the cuprobe API (the CLI is a thin shell over it)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx

# The longest the API holds a GET /jobs/{id}?wait_s= (or a POST /jobs/wait) waiting for a job to end.
MAX_WAIT_S = 60.0
# The most jobs one POST /jobs/wait names (their ids fit the API's 64 KiB request body limit).
MAX_WAITED_JOBS = 1000


TERMINAL_STATES = ("done", "cancelled")  # job states after which nothing changes (the API's `state` field)


class ApiError(RuntimeError):
    """The API refused a request or could not be reached; `status` is the HTTP status (0: unreachable), `asked` the
    request (`POST http://host:port/jobs`) where the server answered."""

    def __init__(self, status: int, message: str, asked: str | None = None) -> None:
        super().__init__(message)
        self.status, self.asked = status, asked

    def said(self) -> str:
        """The message with the request and status it answers, for a person: which server refused matters when
        several run on one machine."""
        return f"{self.asked} answered {self.status}: {self}" if self.asked else str(self)


def _job_path(job_id: str, *rest: str) -> str:
    """`/jobs/ID[/REST]` with the id quoted (a `/`, `?` or `..` in it cannot reach another route); an empty id is
    refused here: `/jobs/` is the list."""
    if not job_id.strip():
        raise ApiError(400, "a job id (or a unique prefix of one) is needed")
    return "/".join(["/jobs", quote(job_id, safe=""), *rest])


class Client:
    """Calls the cuprobe API at `url` with an optional bearer token."""

    def __init__(
        self, url: str, token: str | None = None, timeout: float = 30.0, *, retries: int = 4, backoff_s: float = 0.25
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url, self.timeout = url, timeout
        self.retries, self.backoff_s = retries, backoff_s
        self._http = httpx.Client(base_url=url, headers=headers, timeout=timeout)
        self._one_by_one = False  # the server has no POST /jobs/wait: wait() reads the jobs one by one

    def _send(self, method: str, path: str, *, repeatable: bool = False, **kwargs: Any) -> httpx.Response:
        """One request; a GET or a `repeatable` one (safe to repeat) is retried with exponential backoff on a
        transport error."""
        tries = 1 + (self.retries if method == "GET" or repeatable else 0)
        for attempt in range(tries):
            try:
                return self._http.request(method, path, **kwargs)
            except httpx.TransportError:
                if attempt + 1 == tries:
                    raise
                time.sleep(self.backoff_s * 2**attempt)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _call(self, method: str, path: str, *, repeatable: bool = False, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self._send(method, path, repeatable=repeatable, **kwargs)
        except httpx.TransportError as exc:
            raise ApiError(
                0,
                f"cannot reach the cuprobe API at {self.url} ({exc}); start it with `cuprobe up` "
                "or `cuprobe serve`, or point CUPROBE_API_URL at it",
            ) from exc
        try:
            body: dict[str, Any] = response.json()
        except ValueError:  # not cuprobe's API (its every answer is JSON): a page of some other server
            text = " ".join(response.text.split())
            said = f"HTTP {response.status_code} from {self.url}, not JSON (is it cuprobe's API?): {text[:200]}"
            raise ApiError(response.status_code if response.status_code >= 400 else 502, said) from None
        if response.status_code >= 400:
            asked = f"{method} {response.request.url.copy_with(query=None)}"
            raise ApiError(response.status_code, str(body.get("error") or body), asked)
        return body

    def submit(self, spec: dict[str, Any]) -> dict[str, Any]:
        return self._call("POST", "/jobs", json=spec)

    def job(self, job_id: str, *, wait_s: float = 0.0) -> dict[str, Any]:
        """The job; with `wait_s`, the server holds the answer up to that long until the job ends."""
        wait_s = min(max(wait_s, 0.0), MAX_WAIT_S)
        if not wait_s:
            return self._call("GET", _job_path(job_id))
        return self._call("GET", _job_path(job_id), params={"wait_s": wait_s}, timeout=self.timeout + wait_s)

    def wait(self, job_ids: Sequence[str], *, wait_s: float = 0.0) -> dict[str, Any]:
        """The jobs of `job_ids` (at most MAX_WAITED_JOBS) and the ids of none; with `wait_s`, the server holds the
        answer up to that long until one of them ends."""
        wait_s = min(max(wait_s, 0.0), MAX_WAIT_S)
        body = {"ids": list(job_ids), "wait_s": wait_s}
        if not self._one_by_one:
            try:
                return self._call("POST", "/jobs/wait", json=body, timeout=self.timeout + wait_s, repeatable=True)
            except ApiError as exc:
                if exc.status not in (404, 405):  # 404/405: a server from before POST /jobs/wait
                    raise
                self._one_by_one = True
        return self._wait_one_by_one(job_ids, wait_s)

    def _wait_one_by_one(self, job_ids: Sequence[str], wait_s: float) -> dict[str, Any]:
        """POST /jobs/wait's answer from GET /jobs/{id}: the first pending job's read held up to `wait_s` (an
        older server that does not hold it is asked again at most once a second)."""
        began = time.monotonic()
        jobs: list[dict[str, Any]] = []
        missing: list[str] = []
        held = False
        for job_id in job_ids:
            try:
                job = self.job(job_id, wait_s=0.0 if held else wait_s)
            except ApiError as exc:
                if exc.status != 404:
                    raise
                missing.append(job_id)
                continue
            held = held or job["state"] not in TERMINAL_STATES
            jobs.append(job)
        if not missing and all(job["state"] not in TERMINAL_STATES for job in jobs):
            time.sleep(max(0.0, min(wait_s, 1.0) - (time.monotonic() - began)))
        return {"jobs": jobs, "missing": missing}

    def findings(self, job_id: str) -> dict[str, Any]:
        return self._call("GET", _job_path(job_id, "findings"))

    def cancel(self, job_id: str) -> dict[str, Any]:
        return self._call("POST", _job_path(job_id, "cancel"))

    def jobs(self, **filters: str) -> dict[str, Any]:
        return self._call("GET", "/jobs", params={k: v for k, v in filters.items() if v})

    def health(self) -> dict[str, Any]:
        """GET /health; a 503 body (Redis or store unreachable, a queue with jobs and no worker) is returned, not
        raised."""
        try:
            return self._call("GET", "/health")
        except ApiError as exc:
            if exc.status == 503:
                body: dict[str, Any] = self._http.get("/health").json()
                return {"workers": {}, **body}
            raise
