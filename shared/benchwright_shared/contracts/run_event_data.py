"""The base of every run event's data model, in a module of its own.

``run_events`` (the log's vocabulary) registers ``agent_events``' models, and those
derive from this base: both import it from here, so neither imports the other back.
"""

from pydantic import BaseModel, ConfigDict

__all__ = ["RunEventData"]


class RunEventData(BaseModel):
    # Readers ignore what they do not know (a newer writer's field); writers may not
    # record it (``run_log.check_run_event``).
    model_config = ConfigDict(extra="ignore")
