"""Resource groups of the clients (``bw.runs``, ``bw.admin``)."""

from .admin import Admin
from .async_admin import AsyncAdmin
from .async_runs import AsyncRuns
from .runs import Runs

__all__ = ["Admin", "AsyncAdmin", "AsyncRuns", "Runs"]
