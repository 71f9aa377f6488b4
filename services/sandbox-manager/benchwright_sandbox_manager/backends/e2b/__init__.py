"""The ``e2b`` sandbox backend (``backend.py``); ``launcher.py`` runs inside its sandboxes."""

from benchwright_sandbox_manager.backends.e2b.backend import E2BBackend

__all__ = ["E2BBackend"]
