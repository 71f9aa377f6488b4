"""Resource groups of the client (``bw.runs``, ``bw.admin``)."""

from .admin import Admin
from .runs import Runs

__all__ = ["Admin", "Runs"]
