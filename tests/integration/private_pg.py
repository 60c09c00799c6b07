"""A PostgreSQL cluster of one test's own (initdb + pg_ctl as the postgres user, on a free port): it can be
stopped and started without touching the shared server other tests use."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from cuprobe.service.cli.embedded import free_port

PG_BIN = Path(shutil.which("pg_ctl") or "/usr/local/bin/pg_ctl").parent


class PrivateCluster:
    """initdb'd into a temporary directory owned by postgres; `url` reaches its `postgres` database."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="cuprobe-pg-"))
        self.dir.chmod(0o755)
        shutil.chown(self.dir, "postgres", "postgres")
        self.data = self.dir / "data"
        self.port = free_port()
        self._as_postgres(PG_BIN / "initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _as_postgres(self, *argv: str | Path) -> None:
        as_postgres = ["runuser", "-u", "postgres", "--", *map(str, argv)]
        subprocess.run(as_postgres, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._as_postgres(PG_BIN / "pg_ctl", "-D", self.data, "-o", options, "-l", self.dir / "log", "-w", "start")

    def stop(self) -> None:
        self._as_postgres(PG_BIN / "pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")

    def destroy(self) -> None:
        stop = [str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"]
        subprocess.run(["runuser", "-u", "postgres", "--", *stop], capture_output=True, timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)
