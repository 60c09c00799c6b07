"""The HTTP API (FastAPI): submit jobs, read results and findings, cancel, download artifacts."""

from cuprobe.service.api.app import create_app

__all__ = ["create_app"]
