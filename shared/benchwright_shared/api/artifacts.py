"""``/v1/runs/{id}/artifacts``: what each phase of a run produced, described."""

from datetime import datetime

from pydantic import Field

from benchwright_shared.api.base import Answer, AttrDict


class Artifact(Answer):
    """One artifact of a run: ``art_<seq>`` names it by its place in the log.

    ``type`` is its kind (``fetch``, ``setup``, ``atomize``, ``model_proxy``,
    ``snapshot``, ``inspect_log``, ``report``...); a phase that ran twice has several
    ``version``s of its kind, and ``latest`` marks the last. ``name`` is the file
    name of an ``inspect_log`` only.
    """

    id: str
    object: str = "artifact"
    type: str
    event_type: str
    phase: str
    version: int
    latest: bool
    created_at: datetime
    media_type: str
    size_bytes: int
    sha256: str
    name: str | None = None
    # The run a forked or replayed run took this artifact from.
    inherited_from: str | None = None


class ArtifactDetail(Artifact):
    """An artifact's description and the fields its log entry recorded."""

    data: AttrDict = Field(default_factory=AttrDict)


class ArtifactList(Answer):
    """A run's artifacts: the latest of each kind, or every version."""

    object: str = "list"
    data: list[Artifact] = Field(default_factory=list)
