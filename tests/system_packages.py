"""Tests that need a system package skip, with the reason, where it is missing; CI names what it must have."""

from __future__ import annotations

import os

import pytest


def missing_package(why: str, require: str) -> None:
    """Skip the test for `why`, unless the environment variable `require` is 1 (CI installs the package: a skip
    there would hide that the test never ran), which makes it a failure."""
    if os.environ.get(require) == "1":
        pytest.fail(f"this test must run here ({require}=1): {why}")
    pytest.skip(why)
