"""What every answer type shares: it keeps what it does not declare, and a free-form
object reads as ``AttrDict``.

An answer keeps undeclared keys (``extra="allow"``) for both of its readers: the
gateway passes on what a renderer wrote, and an older SDK keeps working (and keeps
exposing a newer server's fields as attributes) rather than failing validation.
"""

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, PlainSerializer, WithJsonSchema
from pydantic_core import CoreSchema, core_schema


class Answer(BaseModel):
    """The root of the public API's answer types."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class AttrDict(dict[str, Any]):
    """A ``dict`` whose keys are also attributes, recursively (``evt.data.phase``).

    Event payloads vary by event type, so they stay free-form; this keeps them
    convenient without pretending to a schema.
    """

    def __getattr__(self, name: str) -> Any:
        try:
            return _wrap(self[name])
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, key: str) -> Any:
        return _wrap(super().__getitem__(key))

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[Any], handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        """Validate as a plain ``dict[str, Any]`` and wrap the result."""
        return core_schema.no_info_after_validator_function(cls, handler(dict[str, Any]))


def _wrap(value: Any) -> Any:
    if isinstance(value, dict) and not isinstance(value, AttrDict):
        return AttrDict(value)
    if isinstance(value, list):
        return [_wrap(item) for item in value]
    return value


def _iso(value: datetime) -> str:
    return value.isoformat()


# A time the gateway stores as ISO text: read as a datetime, written back as it was
# (``isoformat``: ``+00:00`` stays ``+00:00``, a naive time stays naive).
Timestamp = Annotated[
    datetime,
    PlainSerializer(_iso, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]


class Health(Answer):
    """``GET /healthz``: the API is up."""

    status: str = "ok"
