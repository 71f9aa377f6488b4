"""The root of the shared exception tree."""


class BenchwrightError(Exception):
    """Base class for errors raised by shared Benchwright code."""


class ConfigurationError(BenchwrightError):
    """Settings or the environment make the requested operation impossible."""


class NotFoundError(BenchwrightError):
    """A named entity does not exist (or is not visible to the caller)."""


class ConflictError(BenchwrightError):
    """The request conflicts with the current state."""
