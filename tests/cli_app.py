"""The `cuprobe` Typer app for tests: service.cli.main's when it exists, else one with the service commands alone.

`python -m tests.cli_app ARGS` runs it as the `cuprobe` console script would.
"""

from __future__ import annotations

import typer


def cli_app() -> typer.Typer:
    try:
        from cuprobe.service.cli.main import app
    except ImportError:
        from cuprobe.service.cli.jobs import register

        app = typer.Typer()
        register(app)
    return app


if __name__ == "__main__":
    cli_app()()
