"""The service CLI given input it cannot use, against a real API: exit 2 naming the problem, the user's own text shown
as text (never read as rich markup), ids that cannot reach another route, a server that is not cuprobe's said so."""

from __future__ import annotations

import html
import http.server
import re
import shlex
import threading
from collections.abc import Iterator

import httpx
import pytest
from typer.testing import CliRunner, Result

from tests.cli_app import cli_app
from tests.integration.stack import Stack

cli = CliRunner()


@pytest.fixture(scope="module")
def url(sqlite_stack: Stack) -> str:
    return str(sqlite_stack.start_api().base_url)


def _cli(*args: str) -> Result:
    return cli.invoke(cli_app(), list(args), env={"COLUMNS": "250"})


def _said(result: Result) -> str:
    return " ".join(result.output.split())


def test_brackets_in_a_refused_parameter_are_shown_as_text(url: str) -> None:
    result = _cli("submit", "selftest", "-p", "behaviour=[/bold]", "--url", url)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "'[/bold]' is not one of" in _said(result)
    result = _cli("submit", "selftest", "-p", "behaviour=[red]x", "--url", url)
    assert result.exit_code == 2 and "'[red]x' is not one of" in _said(result)


def test_status_shows_the_tool_in_brackets(url: str) -> None:
    submitted = _cli("submit", "selftest", "--wait", "--url", url)
    assert submitted.exit_code == 0, submitted.output
    job_id = submitted.output.split()[0]
    shown = _cli("status", job_id, "--url", url)
    assert shown.exit_code == 0 and f"{job_id} selftest [none] attempts=1 clean" in _said(shown)


def test_params_that_are_not_a_json_object_are_bad_usage(url: str) -> None:
    for given, says in (("{bad", "not valid JSON"), ("[1, 2]", "a JSON object is needed")):
        result = _cli("submit", "selftest", "--params", given, "--url", url)
        assert result.exit_code == 2 and says in _said(result) and "Traceback" not in result.output, result.output


@pytest.mark.parametrize("given", ["", "../../health", "a/b", "0?x=1"])
def test_an_id_cannot_reach_another_route(url: str, given: str) -> None:
    result = _cli("status", given, "--url", url)
    assert result.exit_code == 2 and "Traceback" not in result.output and "KeyError" not in result.output, result.output


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html><body><h1>Welcome to nginx!</h1></body></html>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def not_cuprobe() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_server_that_is_not_cuprobes_is_named_and_could_not_run(not_cuprobe: str) -> None:
    result = _cli("status", "abcd", "--url", not_cuprobe)
    assert result.exit_code == 3, result.output
    assert "not JSON (is it cuprobe's API?)" in _said(result) and "Welcome to nginx!" in _said(result)


def test_the_dashboard_and_api_answer_dates_at_the_calendars_ends(url: str) -> None:
    with httpx.Client(base_url=url) as client:
        for path in ("/ui/jobs?date=9999-12-31", "/ui/jobs/rows?date=9999-12-31"):
            assert client.get(path).status_code == 200, path
        for before in ("0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"):
            response = client.get("/jobs", params={"before": before})
            assert response.status_code == 200, (before, response.text)
            assert client.get("/ui/jobs", params={"before": before}).status_code == 200


def test_the_dashboards_reproduce_line_keeps_the_whole_request_and_runs(url: str) -> None:
    body = {"probe": "selftest", "tool": "none", "params": {"behaviour": "ok"}, "timeout_s": 20}
    with httpx.Client(base_url=url) as client:
        response = client.post("/jobs", json=body)
        assert response.status_code == 202, response.text
        job = response.json()
        page = client.get(f"/ui/jobs/{job['id']}").text
    found = re.search(r'<pre class="command" id="reproduce-command">(.*?)</pre>', page, re.S)
    assert found, page[:500]
    line = html.unescape(found.group(1)).strip()
    assert line == "cuprobe run selftest --tool none -p behaviour=ok -p seconds=0.0 -p cuda_init=false --timeout 20"
    ran = _cli(*shlex.split(line)[1:], "--json")
    assert ran.exit_code == 0 and '"outcome": "clean"' in ran.output, ran.output
