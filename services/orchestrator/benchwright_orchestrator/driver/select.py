"""Which Driver a run gets: the launch's ``driver`` field, or the configured default."""

from benchwright_orchestrator.driver.base import Driver
from benchwright_orchestrator.driver.offline import BuiltinDriver
from benchwright_shared.settings import Settings

DRIVER_NAMES = ("builtin", "litellm")


def select_driver(requested: str | None, settings: Settings) -> Driver:
    """``builtin``, ``litellm`` (optionally ``litellm:<provider>://<model>``), or the default.

    Without a Driver key the LLM Driver cannot run; the run falls back to the
    builtin one and its log says so (``DriverSelected.note``).
    """
    name = requested or settings.driver_default
    if name == "builtin":
        return BuiltinDriver()
    if not settings.driver_api_key:
        return BuiltinDriver(
            note=(
                f"the {name!r} Driver needs a key (BW_DRIVER_API_KEY) and none is configured: "
                "the builtin Driver runs this launch instead"
            )
        )
    from benchwright_orchestrator.driver.llm import LiteLLMDriver

    model = name.split(":", 1)[1] if name.startswith("litellm:") else settings.driver_model
    return LiteLLMDriver(model=model, settings=settings)
