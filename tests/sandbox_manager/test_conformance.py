"""The `local` backend (bubblewrap) passes the conformance suite.

Each remote backend has its own module beside this one that starts a fake of its
service and points the backend at it (``test_conformance_<backend>.py``).
"""

import pytest

from tests.sandbox_manager.conformance import BackendConformance


class TestLocalBackend(BackendConformance):
    @pytest.fixture
    def backend_name(self) -> str:
        return "local"
