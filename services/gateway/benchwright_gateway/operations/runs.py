"""Finding the caller's run, for the operations that change or derive from it."""

from benchwright_gateway.ports import RunRow, RunViews
from benchwright_shared.refusal import Refused


async def owned_run(views: RunViews, account: str, run_id: str, *, field: str = "run_id") -> RunRow:
    """The ``account``'s run ``run_id``; another account's run answers exactly as a
    missing one does (404 naming ``field``)."""
    row = await views.run(run_id)
    if row is None or row["account"] != account:
        raise Refused(404, "run not found", f"no run {run_id!r}", field=field)
    return row
