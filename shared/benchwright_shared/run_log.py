"""The run log in use: writers validate every entry, readers dispatch on its type.

``contracts/run_events.py`` is the vocabulary: one data model per ``type``,
``RUN_EVENT_TYPES`` from the type's name to its model. This module is how the
services use it.

* Writers (the orchestrator, translating its Run events into log entries) call
  ``check_run_event`` or ``build_run_event``: an unknown type, a field the type's
  model does not have, or a value the model refuses raises ``RunEventError``
  before anything is stored or published.
* Readers (the projections, the gateway's artifacts and narration) look a message
  up in a table keyed by the models (``run_event_table``, ``RunEventHandlers``)
  and get its data as the model (``parse_run_event``, ``read_run_event_data``).
  Reading does not validate: each entry was validated when it was written, a
  rebuild reads every entry of every run (validation there would cost a good part
  of the rebuild), and an entry an older writer left must still read. The typed
  data is built as ``model_construct`` builds it (defaults filled in, nested models
  built, those in a list too, nothing checked), only when a reader has a handler for
  the type. A type the reader does not know, a newer writer's, is skipped: an old
  reader survives a new writer.
"""

import copy
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, get_args, get_origin, overload

from pydantic import BaseModel, ValidationError

from benchwright_shared.contracts.run_events import RUN_EVENT_TYPES, RunEvent, RunEventData

__all__ = [
    "LogEntry",
    "MalformedRunEventError",
    "RunEventError",
    "RunEventHandlers",
    "UnknownRunEventError",
    "build_run_event",
    "check_run_event",
    "parse_run_event",
    "read_run_event_data",
    "run_event_table",
    "run_event_type",
]


class RunEventError(ValueError):
    """A run-log entry no writer may emit (the root of this module's errors)."""


class UnknownRunEventError(RunEventError):
    """The entry's ``type`` has no model in ``RUN_EVENT_TYPES``."""


class MalformedRunEventError(RunEventError):
    """The entry's data is not what its type's model says (a field unknown, missing or
    of the wrong kind)."""


def run_event_type(model: type[RunEventData]) -> str:
    """The ``type`` a model's entries carry in the log (refuses a model not registered)."""
    name = model.__name__
    if RUN_EVENT_TYPES.get(name) is not model:
        raise UnknownRunEventError(f"{model.__qualname__} is not a run event model")
    return name


# -- writing ---------------------------------------------------------------------------
def _accepted(model: type[BaseModel]) -> frozenset[str]:
    found = _ACCEPTED.get(model)
    if found is None:
        found = frozenset(
            key
            for name, field in model.model_fields.items()
            for key in (name, field.alias)
            if key is not None
        )
        _ACCEPTED[model] = found
    return found


_ACCEPTED: dict[type[BaseModel], frozenset[str]] = {}


def check_run_event(event_type: str, data: Mapping[str, Any]) -> RunEventData:
    """``data`` validated as ``event_type``'s model, or ``RunEventError``.

    Stricter than the models are with readers: a field the model does not have is
    refused too (a writer that records it must add it to the model first).
    """
    model = RUN_EVENT_TYPES.get(event_type)
    if model is None:
        raise UnknownRunEventError(f"{event_type!r} is not a run event type")
    unknown = set(data) - _accepted(model)
    if unknown:
        raise MalformedRunEventError(
            f"{event_type} has no field {', '.join(repr(k) for k in sorted(unknown))}"
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise MalformedRunEventError(f"{event_type}: {exc}") from exc


def build_run_event(
    *, run_id: str, seq: int, event_type: str, ts: datetime, data: Mapping[str, Any]
) -> RunEvent:
    """A log entry, its data checked against its type's model first (``check_run_event``).

    The data goes out as given (the model only vouches for it), so an entry reads the
    same whichever path wrote it.
    """
    check_run_event(event_type, data)
    return RunEvent(run_id=run_id, seq=seq, type=event_type, ts=ts, data=dict(data))


# -- reading ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LogEntry[D: RunEventData]:
    """One entry of a run's log as a reader gets it: the envelope, the data typed.

    ``ts`` is as the message carries it (ISO 8601 text on the wire), so a view that
    stores it writes the same bytes a rebuild does.
    """

    run_id: str
    seq: int
    ts: Any
    data: D

    @property
    def type(self) -> str:
        return type(self.data).__name__


@dataclass(frozen=True, slots=True)
class _Field:
    """How ``_construct`` fills one field: from ``key`` in the data, else its default."""

    name: str
    key: str
    default: Any  # ``_MISSING``: required
    factory: Callable[[], Any] | None
    nested: type[BaseModel] | None  # a field holding a model (``sut``): built too
    many: bool  # a list of them (``AgentModelTurn.tool_calls``): each built


_MISSING: Any = object()
_PLANS: dict[type[BaseModel], tuple[_Field, ...]] = {}


def _plan(model: type[BaseModel]) -> tuple[_Field, ...]:
    found = _PLANS.get(model)
    if found is None:
        fields = []
        for name, info in model.model_fields.items():
            nested, many = _nested_model(info.annotation)
            factory = info.default_factory
            default = _MISSING if info.is_required() or factory else info.default
            if isinstance(default, (dict, list, set)):  # each instance gets its own
                factory, default = functools.partial(copy.copy, default), _MISSING
            # (A factory taking the validated data is pydantic's too; no model here has one.)
            fields.append(
                _Field(name, info.alias or name, default, factory, nested, many)  # type: ignore[arg-type]
            )
        found = _PLANS[model] = tuple(fields)
    return found


def _is_model(candidate: Any) -> bool:
    return isinstance(candidate, type) and issubclass(candidate, BaseModel)


def _nested_model(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model a field holds (``X``, ``X | None``), or holds a list of
    (``list[X]``, ``list[X] | None``): ``(model, is_a_list)``; ``(None, False)`` else."""
    for candidate in (annotation, *get_args(annotation)):
        if _is_model(candidate):
            return candidate, False
        if get_origin(candidate) is list:
            inner = get_args(candidate)
            if inner and _is_model(inner[0]):
                return inner[0], True
    return None, False


def _construct[M: BaseModel](model: type[M], data: Mapping[str, Any]) -> M:
    """What ``model_construct`` makes, for about half its cost (each model's plan is
    made once): the data as given, defaults filled in, nested models built (those in
    a list too, unlike ``model_construct``), nothing checked."""
    values: dict[str, Any] = {}
    given: set[str] = set()
    for field in _plan(model):
        if field.key in data:
            value = data[field.key]
            if field.nested is not None:
                value = _built(field.nested, field.many, value)
            values[field.name] = value
            given.add(field.name)
        elif field.factory is not None:
            values[field.name] = field.factory()
        elif field.default is not _MISSING:
            values[field.name] = field.default
    made = model.__new__(model)
    object.__setattr__(made, "__dict__", values)
    object.__setattr__(made, "__pydantic_fields_set__", given)
    object.__setattr__(made, "__pydantic_extra__", None)
    object.__setattr__(made, "__pydantic_private__", None)
    return made


def _built(model: type[BaseModel], many: bool, value: Any) -> Any:
    """A nested field's value with its model(s) built; anything else as given."""
    if not many:
        return _construct(model, value) if isinstance(value, Mapping) else value
    if not isinstance(value, list):
        return value
    return [_construct(model, item) if isinstance(item, Mapping) else item for item in value]


def read_run_event_data[D: RunEventData](model: type[D], data: Mapping[str, Any]) -> D:
    """``data`` as ``model``, unchecked (see the module's docstring): a field the data
    lacks and the model does not default is absent (reading it raises AttributeError)."""
    return _construct(model, data)


def parse_run_event(message: Mapping[str, Any] | RunEvent) -> LogEntry[RunEventData] | None:
    """A run-log entry (the JSON envelope decoded, or a ``RunEvent``) with its data
    typed; None for a type this reader does not know."""
    if isinstance(message, RunEvent):
        model = RUN_EVENT_TYPES.get(message.type)
        if model is None:
            return None
        return LogEntry(message.run_id, message.seq, message.ts, _construct(model, message.data))
    model = RUN_EVENT_TYPES.get(str(message.get("type")))
    if model is None:
        return None
    return _entry(model, message)


def _entry[D: RunEventData](model: type[D], message: Mapping[str, Any]) -> LogEntry[D]:
    return LogEntry(
        run_id=str(message.get("run_id")),
        seq=int(message.get("seq") or 0),
        ts=message.get("ts"),
        data=_construct(model, message.get("data") or {}),
    )


def run_event_table[H](handlers: Mapping[type[RunEventData], H]) -> dict[str, H]:
    """A table from run-log ``type`` to ``H``, written with the models as keys (so only
    types of the vocabulary can be named) and looked up by the type's name."""
    return {run_event_type(model): handler for model, handler in handlers.items()}


type Handler[C, D: RunEventData] = Callable[[C, LogEntry[D]], None]


class RunEventHandlers[C]:
    """A reader's table from run-event model to handler ``(context, entry) -> None``.

    ::

        handlers: RunEventHandlers[ViewCursor] = RunEventHandlers()

        @handlers.on(RunDeleted)
        def _deleted(cur: ViewCursor, entry: LogEntry[RunDeleted]) -> None: ...

        handlers.dispatch(cur, message)  # False: a type it has no handler for

    Only a type with a handler has its data built, so the types a reader ignores
    cost it a dictionary lookup.
    """

    def __init__(self) -> None:
        self._table: dict[str, tuple[type[RunEventData], Handler[C, Any]]] = {}

    @overload
    def on[D: RunEventData](
        self, model: type[D], /
    ) -> Callable[[Handler[C, D]], Handler[C, D]]: ...

    @overload
    def on[D1: RunEventData, D2: RunEventData](
        self, first: type[D1], second: type[D2], /
    ) -> Callable[[Handler[C, D1 | D2]], Handler[C, D1 | D2]]: ...

    def on(self, *models: type[RunEventData]) -> Callable[[Handler[C, Any]], Handler[C, Any]]:
        """Register the decorated function for ``model`` (or both of two models: it
        takes an entry of either)."""

        def register(handler: Handler[C, Any]) -> Handler[C, Any]:
            for model in models:
                name = run_event_type(model)
                if name in self._table:
                    raise ValueError(f"{name} has a handler already")
                self._table[name] = (model, handler)
            return handler

        return register

    @property
    def types(self) -> frozenset[str]:
        """The run-log types this table has a handler for."""
        return frozenset(self._table)

    def dispatch(self, context: C, message: Mapping[str, Any]) -> bool:
        """Hand ``message`` to its type's handler; False when there is none (an unknown
        type, or one this reader has nothing to do with)."""
        found = self._table.get(message.get("type", ""))
        if found is None:
            return False
        model, handler = found
        handler(context, _entry(model, message))
        return True
