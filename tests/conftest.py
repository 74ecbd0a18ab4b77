from __future__ import annotations

import pytest

DEFAULT_TIMEOUT_S = 120


def pytest_collection_modifyitems(items):
    """Every test gets a timeout: nothing in this suite may hang CI."""
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(DEFAULT_TIMEOUT_S))
