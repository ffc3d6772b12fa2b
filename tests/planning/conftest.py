"""Fixtures for the planning tests: where the planning instances live."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PLANNING_DATA = REPO_ROOT / "tests" / "data" / "planning"
"""The instances kept in the repository (tests/data/planning/README.md names their source)."""
# Instances that cannot be kept in the repository, read from a folder beside the checkout.
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def planning_data() -> Path:
    return PLANNING_DATA


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared planning instances not found at {SHARED_DATA} (expected ../shared/data beside the repo)")
    return SHARED_DATA
