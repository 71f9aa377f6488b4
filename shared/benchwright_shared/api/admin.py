"""``/v1/admin``: the answers of operator commands on read models."""

from pydantic import Field

from benchwright_shared.api.base import Answer


class ProjectionRebuild(Answer):
    """The outcome of replaying the event log into a projection."""

    projection: str
    applied: int
    # None, not '', when absent: ``unchanged`` is then False.
    digest: str | None = None
    before_digest: str | None = None
    # Messages the replay could not apply and set aside (``/parked`` lists them).
    parked: int = 0

    @property
    def unchanged(self) -> bool:
        """Whether the rebuilt projection is identical to the one it replaced."""
        return self.digest is not None and self.digest == self.before_digest


class ParkedMessage(Answer):
    """A message a read model could not apply, set aside with its error."""

    position: int
    error: str
    message: str
    parked_at: str


class ParkedList(Answer):
    """The messages a read model has set aside."""

    object: str = "list"
    data: list[ParkedMessage] = Field(default_factory=list)
