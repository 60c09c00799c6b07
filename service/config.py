"""Settings, from CUPROBE_* environment variables (pydantic-settings), with one module-level instance."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CUPROBE_", extra="ignore")

    # Where compute-sanitizer is: this path first, then the PyPI wheel's, then PATH, then CUDA_HOME.
    sanitizer_path: Path | None = None
    # Sanitizer exit code that means "errors detected" (distinct from any code a probe exits with).
    error_exitcode: int = 86
    timeout_s: float = 600.0
    # Caps on what one run keeps: records stored, XML bytes read, stdout/stderr bytes captured.
    max_records: int = 10_000
    max_xml_bytes: int = 512 * 1024 * 1024
    max_output_bytes: int = 4 * 1024 * 1024
    # Where each run's artifacts (run.xml, stdout, stderr, result.json) are written.
    data_dir: Path = Path("cuprobe-data")
    # Extra source roots that finding paths are made relative to (the project root and cwd always are).
    source_roots: list[str] = []
    # Python that runs probes (the worker's own by default).
    python: str | None = None
    # Store and queue (used by the service; the embedded default needs neither set).
    database_url: str | None = None
    broker_url: str | None = None


settings = Settings()
