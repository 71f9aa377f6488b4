"""Projections: read models built from a JetStream stream.

A projection's view rows and the stream position it applied are written in one
transaction, with one tracking row per position (JetStream redelivers out of
order, so "the highest position seen" would drop messages). A position that is
already tracked is skipped: a redelivered or duplicated message is applied once.

A projection can be dropped and rebuilt by replaying its stream from the start.
"""

import contextlib
import hashlib
import json
import logging
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from eventsourcing import persistence as es_persistence
from eventsourcing.persistence import InfrastructureFactory, IntegrityError, Tracking
from eventsourcing.postgres import PostgresTrackingRecorder
from eventsourcing.sqlite import SQLiteTrackingRecorder
from eventsourcing.utils import Environment

from benchwright_shared.settings import Settings
from benchwright_shared.store import eventsourcing_env

log = logging.getLogger(__name__)


class ViewCursor:
    """A cursor that takes ``?`` placeholders on SQLite and PostgreSQL alike."""

    def __init__(self, cursor: Any, *, postgres: bool, schema: str | None) -> None:
        self._cursor = cursor
        self._postgres = postgres
        self._schema = schema

    def table(self, name: str) -> str:
        return f'"{self._schema}".{name}' if self._postgres else name

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        if self._postgres:
            sql = sql.replace("?", "%s")
        self._cursor.execute(sql, list(params))

    def pipeline(self) -> contextlib.AbstractContextManager[Any]:
        """Statements inside are sent without waiting for each answer (PostgreSQL's
        pipeline mode; a fetch waits for what it needs). Nothing changes on SQLite."""
        if self._postgres:
            return self._cursor.connection.pipeline()  # type: ignore[no-any-return]
        return contextlib.nullcontext()

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if self._postgres:
            sql = sql.replace("?", "%s")
        self._cursor.executemany(sql, [list(r) for r in rows])

    def fetchall(self) -> list[dict[str, Any]]:
        rows = self._cursor.fetchall()
        return [dict(r) for r in rows]

    def fetchvalues(self) -> list[list[Any]]:
        """Every remaining row as a list of its values, in column order."""
        return [
            list(r.values()) if isinstance(r, dict) else list(r) for r in self._cursor.fetchall()
        ]

    def fetchone(self) -> dict[str, Any] | None:
        row = self._cursor.fetchone()
        return dict(row) if row is not None else None


class Projection(ABC):
    """A read model: its tables, and how one message changes them."""

    name: str
    # Bump when the tables or what ``apply`` writes change: the old view is
    # dropped and a fresh consumer replays the stream into the new one.
    version: int = 1
    tables: dict[str, str]  # table name -> column definitions (portable SQL)
    indexes: Sequence[str] = ()  # "table(col, ...)"

    @abstractmethod
    def apply(self, cur: ViewCursor, message: dict[str, Any]) -> None:
        """Change the view for one message. Must not commit."""

    def apply_batch(self, cur: ViewCursor, messages: Sequence[dict[str, Any]]) -> None:
        """Change the view for consecutive messages, in order. Must not commit.

        A projection that can fold work across a batch (one update per row instead
        of one per message) overrides this; the result must equal ``apply`` in turn.
        """
        for message in messages:
            self.apply(cur, message)


class ProjectionStore:
    """Where one service keeps its projections, with their tracking rows."""

    def __init__(self, settings: Settings, service: str, projections: Sequence[Projection]) -> None:
        env = eventsourcing_env(settings, service, part="views")
        self.projections = {p.name: p for p in projections}
        self.postgres = settings.uses_postgres
        factory = InfrastructureFactory.construct(Environment(name=service, env=env))
        ddl = (
            [
                f"CREATE TABLE IF NOT EXISTS {{schema}}{table} ({columns})"
                for p in projections
                for table, columns in p.tables.items()
            ]
            + [
                f"CREATE INDEX IF NOT EXISTS ix_{spec.split('(')[0]}_"
                f"{abs(hash(spec)) % 10**8} ON {{schema}}{spec}"
                for p in projections
                for spec in p.indexes
            ]
            + [
                "CREATE TABLE IF NOT EXISTS {schema}parked_messages (projection TEXT NOT NULL, "
                "position BIGINT NOT NULL, error TEXT NOT NULL, message TEXT NOT NULL, "
                "parked_at TEXT NOT NULL, PRIMARY KEY (projection, position))"
            ]
        )
        self.schema = env.get("POSTGRES_SCHEMA")
        self.recorder = factory.tracking_recorder()
        self._drop_outdated()
        self._create_views(ddl)

    # -- low level ----------------------------------------------------------------
    def _transaction(self, *, commit: bool) -> Any:
        return self.recorder.datastore.transaction(commit=commit)  # type: ignore[attr-defined]

    def _cursor(self, raw: Any) -> ViewCursor:
        return ViewCursor(raw, postgres=self.postgres, schema=self.schema)

    def _drop_outdated(self) -> None:
        """Drop views whose projection changed version since they were built."""
        tracking = self._tracking_table()
        with self._transaction(commit=True) as raw:
            cur = self._cursor(raw)
            versions = cur.table("projection_versions")
            cur.execute(
                f"CREATE TABLE IF NOT EXISTS {versions} (name TEXT PRIMARY KEY, version INTEGER)"
            )
            for projection in self.projections.values():
                cur.execute(f"SELECT version FROM {versions} WHERE name = ?", [projection.name])
                row = cur.fetchone()
                if row is not None and int(row["version"]) == projection.version:
                    continue
                for table in projection.tables:
                    cur.execute(f"DROP TABLE IF EXISTS {cur.table(table)}")
                cur.execute(f"DELETE FROM {tracking} WHERE application_name = ?", [projection.name])
                cur.execute(f"DELETE FROM {versions} WHERE name = ?", [projection.name])
                cur.execute(
                    f"INSERT INTO {versions} VALUES (?, ?)", [projection.name, projection.version]
                )

    def _create_views(self, ddl: list[str]) -> None:
        prefix = f'"{self.schema}".' if self.postgres else ""
        with self._transaction(commit=True) as raw:
            for statement in ddl:
                raw.execute(statement.replace("{schema}", prefix))

    # -- applying -----------------------------------------------------------------
    def apply(self, projection: str, position: int, message: dict[str, Any]) -> bool:
        """Apply one message at ``position``; False if that position was already applied."""
        handler = self.projections[projection]
        try:
            with self._transaction(commit=True) as raw:
                self.recorder._insert_tracking(raw, Tracking(projection, position))  # type: ignore[attr-defined]
                handler.apply(self._cursor(raw), message)
        except IntegrityError:
            return False
        except Exception as exc:
            if _is_unique_violation(exc):
                return False
            raise
        return True

    def apply_many(self, projection: str, items: Sequence[tuple[int, dict[str, Any]]]) -> int:
        """Apply a batch in one transaction (one fsync, not one per message).

        Positions already tracked are skipped. If another writer (a rebuild)
        tracks one of them meanwhile, the batch falls back to one transaction
        per message, which skips exactly the duplicates.
        """
        try:
            with self._transaction(commit=True) as raw:
                return self._apply_untracked(self._cursor(raw), projection, items)
        except Exception as exc:
            if isinstance(exc, IntegrityError) or _is_unique_violation(exc):
                return sum(self.apply(projection, p, m) for p, m in items)
            raise

    def apply_in_order(
        self, projection: str, items: Sequence[tuple[int, dict[str, Any]]], seen_up_to: int
    ) -> int | None:
        """Apply a batch read in stream order, after everything up to ``seen_up_to``.

        Copies of a service each read the whole stream in order and take turns here
        (an advisory lock on PostgreSQL), so every position is applied once, and never
        before an earlier one: a position another copy applied is skipped. Returns how
        many were applied, or None when the projection was reset under the reader (its
        tracking is behind what the reader saw): the reader starts again from
        ``max_position() + 1``.
        """
        tracking = self._tracking_table()
        with self._transaction(commit=True) as raw:
            cur = self._cursor(raw)
            if self.postgres:
                cur.execute(
                    "SELECT pg_advisory_xact_lock(hashtext(?))", [f"{self.schema}.{projection}"]
                )
            cur.execute(
                f"SELECT MAX(notification_id) AS m FROM {tracking} WHERE application_name = ?",
                [projection],
            )
            row = cur.fetchone()
            if int((row or {}).get("m") or 0) < seen_up_to:
                return None
            return self._apply_untracked(cur, projection, items)

    def _apply_untracked(
        self, cur: ViewCursor, projection: str, items: Sequence[tuple[int, dict[str, Any]]]
    ) -> int:
        """Apply the items whose positions are not tracked yet, and track them, in ``cur``'s
        transaction: one query for what is tracked, one insert for the new tracking rows,
        and the projection's own batch."""
        tracking = self._tracking_table()
        positions = sorted({p for p, _ in items})
        if not positions:
            return 0
        # Tracked positions of this batch: those between its ends (one range scan of
        # the primary key, not a thousand-parameter IN list).
        cur.execute(
            f"SELECT notification_id FROM {tracking} WHERE application_name = ? "
            "AND notification_id >= ? AND notification_id <= ?",
            [projection, positions[0], positions[-1]],
        )
        done = {int(r["notification_id"]) for r in cur.fetchall()}
        fresh: list[tuple[int, dict[str, Any]]] = []
        for position, message in items:
            if position not in done:
                done.add(position)
                fresh.append((position, message))
        if fresh:
            # Over a network, one round trip per statement would bound a replay.
            with cur.pipeline():
                cur.executemany(
                    f"INSERT INTO {tracking} (application_name, notification_id) VALUES (?, ?)",
                    [(projection, p) for p, _ in fresh],
                )
                self.projections[projection].apply_batch(cur, [m for _, m in fresh])
        return len(fresh)

    # -- a message that cannot be applied ------------------------------------------
    def apply_many_or_park(
        self, projection: str, items: Sequence[tuple[int, dict[str, Any]]]
    ) -> int:
        """``apply_many``; a batch that fails for its content goes again one message at
        a time, and a message that fails on its own is parked (``park``)."""
        try:
            return self.apply_many(projection, items)
        except Exception as exc:
            if is_infrastructure(exc):
                raise
        return sum(self._one_or_park(projection, p, m, None) or 0 for p, m in items)

    def apply_in_order_or_park(
        self, projection: str, items: Sequence[tuple[int, dict[str, Any]]], seen_up_to: int
    ) -> int | None:
        """``apply_in_order``, parking what cannot be applied (see ``apply_many_or_park``)."""
        try:
            return self.apply_in_order(projection, items, seen_up_to)
        except Exception as exc:
            if is_infrastructure(exc):
                raise
        applied = 0
        for position, message in items:
            got = self._one_or_park(projection, position, message, seen_up_to)
            if got is None:
                return None
            applied += got
            seen_up_to = position
        return applied

    def _one_or_park(
        self, projection: str, position: int, message: dict[str, Any], seen_up_to: int | None
    ) -> int | None:
        try:
            if seen_up_to is None:
                return self.apply_many(projection, [(position, message)])
            return self.apply_in_order(projection, [(position, message)], seen_up_to)
        except Exception as exc:
            if is_infrastructure(exc):
                raise
            self.park(projection, position, message, exc)
            return 0

    def park(
        self, projection: str, position: int, message: dict[str, Any], error: BaseException
    ) -> None:
        """Set a message aside, visibly, and go on: it counts as taken in (tracked), its
        error and body are kept in ``parked_messages``, and the log says so. One bad
        message must not stop a read model, nor vanish."""
        log.error(
            "projection %s: parked the message at %s (%s): %s",
            projection,
            position,
            message.get("type"),
            error,
        )
        text = json.dumps(message, default=str, ensure_ascii=True)
        with self._transaction(commit=True) as raw:
            cur = self._cursor(raw)
            self.recorder._insert_tracking(raw, Tracking(projection, position))  # type: ignore[attr-defined]
            cur.execute(
                f"INSERT INTO {cur.table('parked_messages')} "
                "(projection, position, error, message, parked_at) VALUES (?, ?, ?, ?, ?)",
                [
                    projection,
                    position,
                    f"{type(error).__name__}: {error}"[:2000].replace("\x00", ""),
                    text,
                    datetime.now(UTC).isoformat(),
                ],
            )

    def parked(self, projection: str) -> list[dict[str, Any]]:
        """The messages set aside for ``projection``, oldest first."""

        def rows(cur: ViewCursor) -> list[dict[str, Any]]:
            cur.execute(
                f"SELECT position, error, message, parked_at FROM "
                f"{cur.table('parked_messages')} WHERE projection = ? ORDER BY position",
                [projection],
            )
            return cur.fetchall()

        return self.read(rows)

    def tracked(self, projection: str) -> int:
        """How many stream positions the projection has taken in."""
        tracking = self._tracking_table()

        def count(cur: ViewCursor) -> int:
            cur.execute(
                f"SELECT COUNT(*) AS n FROM {tracking} WHERE application_name = ?", [projection]
            )
            row = cur.fetchone()
            return int((row or {}).get("n") or 0)

        return self.read(count)

    def max_position(self, projection: str) -> int:
        return self.recorder.max_tracking_id(projection) or 0

    def read[T](self, fn: Callable[[ViewCursor], T]) -> T:
        with self._transaction(commit=False) as raw:
            return fn(self._cursor(raw))

    def write[T](self, fn: Callable[[ViewCursor], T]) -> T:
        with self._transaction(commit=True) as raw:
            return fn(self._cursor(raw))

    # -- rebuilding ---------------------------------------------------------------
    def reset(self, projection: str) -> None:
        """Drop a projection's rows and its tracking, in one transaction."""
        handler = self.projections[projection]
        tracking = self._tracking_table()
        with self._transaction(commit=True) as raw:
            cur = self._cursor(raw)
            if self.postgres:  # not in the middle of another copy's batch
                cur.execute(
                    "SELECT pg_advisory_xact_lock(hashtext(?))", [f"{self.schema}.{projection}"]
                )
            for table in handler.tables:
                # TRUNCATE (transactional on PostgreSQL) leaves no dead rows for the
                # replay's inserts to step over, as DELETE would until a vacuum.
                verb = "TRUNCATE TABLE" if self.postgres else "DELETE FROM"
                cur.execute(f"{verb} {cur.table(table)}")
            cur.execute(f"DELETE FROM {tracking} WHERE application_name = ?", [projection])
            cur.execute(
                f"DELETE FROM {cur.table('parked_messages')} WHERE projection = ?", [projection]
            )

    def digest(self, projection: str) -> str:
        """A hash over every row of a projection, to compare two builds of it."""
        handler = self.projections[projection]

        def dump(cur: ViewCursor) -> str:
            h = hashlib.sha256()
            for table in sorted(handler.tables):
                cur.execute(f"SELECT * FROM {cur.table(table)}")
                # Each row as its values in column order (the table's own order, the
                # same for both builds compared), rows sorted: no per-row dict.
                rows = sorted(json.dumps(values, default=str) for values in cur.fetchvalues())
                h.update(table.encode())
                h.update("\n".join(rows).encode())
            return h.hexdigest()

        return self.read(dump)

    def _tracking_table(self) -> str:
        if isinstance(self.recorder, PostgresTrackingRecorder):
            return f'"{self.schema}".{self.recorder.tracking_table_name}'
        assert isinstance(self.recorder, SQLiteTrackingRecorder)
        return "tracking"

    def close(self) -> None:
        self.recorder.datastore.close()  # type: ignore[attr-defined]


def is_infrastructure(exc: BaseException) -> bool:
    """Whether ``exc`` says the database is away or busy (try the same again later),
    rather than that this message cannot be applied."""
    if isinstance(exc, (es_persistence.OperationalError, es_persistence.InterfaceError)):
        return True
    if isinstance(exc, (ConnectionError, TimeoutError, sqlite3.OperationalError)):
        return True
    if _connection_terminated(exc):
        return True
    name = f"{type(exc).__module__}.{type(exc).__name__}"
    return name.startswith("psycopg") and ("Operational" in name or "Interface" in name)


def _connection_terminated(exc: BaseException) -> bool:
    """PostgreSQL ended the session (an idle-in-transaction timeout, an administrator):
    psycopg reports some of these as InternalError, which eventsourcing re-raises as
    its own InternalError; the message is what says the connection, not the data, failed."""
    text = str(exc).lower()
    return "terminating connection" in text or "server closed the connection" in text


def _is_unique_violation(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return "unique" in text or "integrity" in text or "duplicate key" in text
