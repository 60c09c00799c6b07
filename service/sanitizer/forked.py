"""Chunk parser children forked from a server that imported the parser once, instead of each importing it.

A local sweep with K slots parses each run's XML in a child process (service/sanitizer/pool.py: K parses in threads
of one process would take turns on its interpreter lock). A `python -m cuprobe.service.sanitizer.pool` child spends its
first 0.4-0.5 s importing cuprobe's parser, after the run it parses: on the H200 the slowest of eight processes spent
0.7-1.0 s in its parse stage for a 6.4 MB XML. Children started ahead would take their imports' CPU from the
sanitizer runs at a time when the host's cores are the limit (docs/sweep.md, "Parsing beside other slots"). So a
sweep starts one server (`python -m cuprobe.service.sanitizer.forked`) when it starts: it
imports the parser once, then forks one child per connection on a Unix socket; a parse connects, and its child
costs a fork.

multiprocessing's forkserver would do the same, but it imports the caller's main script in the server (a script
without a `__main__` guard would run again there), so this is its own small server. It ends when the sweep closes
it, or when the sweep's process ends (its stdin, a pipe from the sweep, closes).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time

from cuprobe.service.sanitizer.chunks import Chunk, ChunkResult, Context
from cuprobe.service.sanitizer.pool import ChildParser, ChunkWorker, WorkerFailed, answer, checked, child_environment

# How long a parse waits for its forked child's first word (the server may still be importing the parser, on a busy
# host); past it the parse starts a child of its own.
FIRST_WORD_S = 60.0


class ParserServer:
    """The server process and its socket; `child` gives a ChildParser forked from it (pool.merge_in_order's child)."""

    def __init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="cuprobe-parsers-")
        self.path = os.path.join(self._dir, "socket")
        # Bound and listening here, so that a parse may connect at once: the server accepts once it has imported.
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        self._listener.listen(64)
        fd = self._listener.fileno()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "cuprobe.service.sanitizer.forked", str(fd)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=child_environment(),
                pass_fds=(fd,),
            )
        except OSError as exc:
            self._cleanup()
            raise WorkerFailed(f"cannot start the chunk parser server: {exc}") from exc
        # Only the server listens from now on: should it die, a parse's connect is refused at once (and the parse
        # starts its own child) instead of waiting in a queue nobody accepts from.
        self._listener.close()

    @property
    def running(self) -> bool:
        return self._proc.poll() is None

    def child(self, ctx: Context) -> ChildParser:
        """A child forked by the server; where none can be, one started as pool.ChunkWorker (WorkerFailed, and the
        parse goes on in the calling process, where neither can)."""
        try:
            return ForkedParser(self.path, ctx)
        except WorkerFailed:
            return ChunkWorker(ctx)

    def close(self) -> None:
        """End the server (children parsing now finish their file)."""
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._cleanup()

    def _cleanup(self) -> None:
        self._listener.close()
        with contextlib.suppress(OSError):
            os.remove(self.path)
        with contextlib.suppress(OSError):
            os.rmdir(self._dir)


def start_server() -> ParserServer | None:
    """A server for this sweep's parses; None where it cannot start (each parse then starts its own processes)."""
    try:
        return ParserServer()
    except (WorkerFailed, OSError):
        return None


class ForkedParser:
    """One child of the server, for the chunks of one file (pool.ChildParser)."""

    def __init__(self, path: str, ctx: Context) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(path)
            self._sock.settimeout(FIRST_WORD_S)
            self._file = self._sock.makefile("rwb")
            self.pid: int = pickle.load(self._file)  # the child's first word: it was forked
            self._sock.settimeout(None)
            self._send(ctx)
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            self._sock.close()
            raise WorkerFailed(f"no forked chunk parser: {exc}") from exc

    def _send(self, message: object) -> None:
        pickle.dump(message, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self._file.flush()

    @property
    def running(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def parse(self, chunk: Chunk) -> ChunkResult:
        try:
            self._send(chunk)
            reply = pickle.load(self._file)
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            raise WorkerFailed(f"forked chunk parser ended: {exc}") from exc
        return checked(reply)

    def close(self) -> None:
        try:
            self._send(None)
            self._sock.settimeout(5)
            self._file.read(1)  # end of file: the child has exited
        except OSError:  # the child had ended already, or did not within 5 s: either way it is let go
            pass
        with contextlib.suppress(OSError):  # what is still buffered for a child that died is dropped
            self._file.close()
        self._sock.close()
        deadline = time.monotonic() + 5  # its socket closes just before it exits
        while self.running and time.monotonic() < deadline:
            time.sleep(0.005)


def _serve(conn: socket.socket) -> None:
    """A forked child: its pid, then a file's Context, then chunks until None, each answered as pool.main answers."""
    with conn, conn.makefile("rwb") as stream:
        pickle.dump(os.getpid(), stream)
        stream.flush()
        ctx: Context = pickle.load(stream)
        while (chunk := pickle.load(stream)) is not None:
            pickle.dump(answer(ctx, chunk), stream, protocol=pickle.HIGHEST_PROTOCOL)
            stream.flush()


def main() -> None:
    """The server: accept on the listening socket it was given, fork a child per connection; end when stdin closes."""
    listener = socket.socket(fileno=int(sys.argv[1]))
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(sys.stdin.buffer, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is not listener:  # stdin: closed (or written to) by the sweep
                return
            conn, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                try:
                    _serve(conn)
                except (OSError, EOFError, pickle.UnpicklingError):
                    pass
                finally:
                    os._exit(0)
            conn.close()


if __name__ == "__main__":
    main()
