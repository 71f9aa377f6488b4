"""The rules a run refuses to break, one error each, under one root."""

__all__ = ["NoSelectionError", "RunAlreadyFinishedError", "RunError", "RunNotPublishableError"]


class RunError(Exception):
    """Base for rule violations on a run."""


class RunAlreadyFinishedError(RunError):
    """A finished run's log takes no more pipeline events."""


class NoSelectionError(RunError):
    """Materialize was reached with no tasks selected."""


class RunNotPublishableError(RunError):
    """Only a finished, successful run of a known benchmark can be public."""
