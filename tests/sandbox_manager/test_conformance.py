"""Every registered sandbox backend passes the conformance suite."""

import pytest

from benchwright_sandbox_manager.backends import BACKENDS
from tests.sandbox_manager.conformance import BackendConformance


@pytest.fixture(params=sorted(BACKENDS))
def backend_name(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


class TestRegisteredBackends(BackendConformance):
    pass
