"""Shared fixtures."""

from __future__ import annotations

import pytest

from rlxir.targets.target import available_targets, register_target, unregister_target


@pytest.fixture
def scoped_target():
    """Register targets for one test only: ``scoped_target(target)`` returns it."""
    added: list[str] = []

    def register(target):
        added.append(target.name)
        return register_target(target, replace=True)

    yield register
    registered = available_targets()
    for name in added:
        if name in registered:
            unregister_target(name)


@pytest.fixture(autouse=True, scope="session")
def import_cache_outside_home(tmp_path_factory):
    """Models the suite hands to commands are cached in a temporary directory, never the user's."""
    import os

    os.environ.setdefault("RLXIR_CACHE_DIR", str(tmp_path_factory.mktemp("rlxir-import-cache")))
