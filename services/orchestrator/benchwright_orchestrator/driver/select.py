"""Which Driver a run gets: the launch's ``driver`` field, or the configured default."""

from collections.abc import Mapping

from benchwright_orchestrator.driver.base import Driver
from benchwright_orchestrator.driver.offline import BuiltinDriver
from benchwright_shared.settings import Settings

DRIVER_NAMES = ("builtin", "litellm")


def select_driver(
    requested: str | None, settings: Settings, phase_models: Mapping[str, str] | None = None
) -> Driver:
    """``builtin``, ``litellm`` (optionally ``litellm:<provider>://<model>``), or the default.

    Without a Driver key the LLM Driver cannot run; the run falls back to the
    builtin one and its log says so (``DriverSelected.note``), as it does when the
    launch named ``phase_models`` for a Driver that has no model.
    """
    name = requested or settings.driver_default
    unused = (
        f"; its phase_models ({', '.join(sorted(phase_models))}) are not used"
        if phase_models
        else ""
    )
    if name == "builtin":
        note = f"the builtin Driver has no model{unused}" if phase_models else None
        return BuiltinDriver(note=note)
    if not settings.driver_api_key:
        return BuiltinDriver(
            note=(
                f"the {name!r} Driver needs a key (BW_DRIVER_API_KEY) and none is configured: "
                f"the builtin Driver runs this launch instead{unused}"
            )
        )
    from benchwright_orchestrator.driver.llm import LiteLLMDriver

    model = name.split(":", 1)[1] if name.startswith("litellm:") else settings.driver_model
    return LiteLLMDriver(model=model, settings=settings, phase_models=phase_models)
