"""The base every contract builds on."""

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict


class Contract(BaseModel):
    """A message that crosses a service boundary.

    Unknown fields are ignored so that a newer producer's optional additions do
    not break an older consumer.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    subject: ClassVar[str]

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()


class Problem(BaseModel):
    """A failure carried over the bus, shaped like RFC 9457 problem details."""

    model_config = ConfigDict(extra="ignore")

    type: str = "about:blank"
    title: str
    status: int = 500
    detail: str | None = None
    field: str | None = None
    extra: dict[str, Any] | None = None
