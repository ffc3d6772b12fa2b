"""Fixtures for the planning tests: where the shared planning instances live."""

from __future__ import annotations

from pathlib import Path

import pytest

# The repository is a checkout with the shared data beside it: <repo>/../shared/data.
REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared planning instances not found at {SHARED_DATA} (expected ../shared/data beside the repo)")
    return SHARED_DATA
