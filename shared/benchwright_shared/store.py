"""Event stores and projection stores, one per service.

``eventsourcing`` keeps each service's events: a SQLite file per service in the
embedded default, a PostgreSQL schema per service in production. Its API is
synchronous, so async code reaches it through ``BlockingStore.run`` on one
dedicated thread per store (SQLite serialises writers anyway).
"""

import asyncio
import contextlib
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import unquote, urlparse

from benchwright_shared.settings import Settings

_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")


def _schema_name(service: str) -> str:
    name = service.replace("-", "_")
    if not _IDENT.match(name):
        raise ValueError(f"bad schema name {name!r}")
    return f"bw_{name}"


def postgres_params(database_url: str) -> dict[str, str]:
    url = urlparse(database_url)
    return {
        "POSTGRES_DBNAME": (url.path or "/").lstrip("/") or "postgres",
        "POSTGRES_HOST": url.hostname or "127.0.0.1",
        "POSTGRES_PORT": str(url.port or 5432),
        "POSTGRES_USER": unquote(url.username or "postgres"),
        "POSTGRES_PASSWORD": unquote(url.password or ""),
    }


# Any number: every copy of every service agrees on it.
SETUP_LOCK_KEY = 0x0B3C_4E5D


@contextlib.contextmanager
def setup_lock(settings: Settings) -> Iterator[None]:
    """Hold PostgreSQL's setup lock while a process creates its schemas and tables.

    ``CREATE TABLE IF NOT EXISTS`` is not safe against itself in PostgreSQL: two
    copies starting at once can both try, and one fails on a unique index of the
    catalog. Copies take turns instead (a session advisory lock). SQLite needs none.
    """
    if not settings.uses_postgres:
        yield
        return
    import psycopg

    assert settings.database_url
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", [SETUP_LOCK_KEY])
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", [SETUP_LOCK_KEY])


def ensure_postgres_schema(database_url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')


def eventsourcing_env(settings: Settings, service: str, *, part: str = "events") -> dict[str, str]:
    """The ``eventsourcing`` environment for one service's store.

    ``part`` separates a service's event store from its projection store, so a
    projection can be dropped without touching events.
    """
    env = {"CREATE_TABLE": "y", "SINGLE_ROW_TRACKING": "n"}
    if settings.uses_postgres:
        assert settings.database_url
        schema = _schema_name(service if part == "events" else f"{service}_{part}")
        ensure_postgres_schema(settings.database_url, schema)
        env |= {
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_SCHEMA": schema,
            # Each store is used from one thread (``BlockingStore``): one connection is
            # enough, one more covers a moment of overlap. See deploy/README.md for
            # what a copy of each service holds.
            "POSTGRES_POOL_SIZE": str(settings.postgres_pool_size),
            "POSTGRES_MAX_OVERFLOW": str(settings.postgres_max_overflow),
            "POSTGRES_LOCK_TIMEOUT": "5",
            # eventsourcing's default (5 s) kills a connection whose transaction sits
            # idle that long. On a loaded 2-core machine a store thread can wait that
            # long for the GIL between two statements of one batch (seen in CI: the
            # next statement failed with "terminating connection"). The timeout only
            # exists to free locks a vanished client held; a minute still does that.
            "POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT": "60",
            **postgres_params(settings.database_url),
        }
    else:
        path = settings.service_dir(service) / f"{part}.sqlite"
        env |= {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(path),
            "SQLITE_LOCK_TIMEOUT": "10",
        }
    return env


class StoreClosedError(RuntimeError):
    """The service is stopping: its store takes no more work. A message that meets
    this goes back to the stream for another copy, or for this one's next start."""


class BlockingStore:
    """Runs synchronous store calls on a dedicated thread, off the event loop."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"store-{name}")
        self._closed = False

    async def run[T](self, fn: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise StoreClosedError(f"the {self.name} store is closed: the service is stopping")
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)
        except RuntimeError as exc:  # closed between the check and the submit
            if self._closed and not isinstance(exc, StoreClosedError):
                raise StoreClosedError(f"the {self.name} store closed meanwhile") from exc
            raise

    def close(self) -> None:
        self._closed = True
        self._executor.shutdown(wait=True)
