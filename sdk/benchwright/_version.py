"""The installed distribution's version."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__: str = version("benchwright")
except PackageNotFoundError:  # pragma: no cover - only when running from a bare checkout
    __version__ = "0.0.0"
