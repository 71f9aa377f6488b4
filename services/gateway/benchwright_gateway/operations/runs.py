"""Finding the caller's run, for the operations that change or derive from it."""

from benchwright_gateway.ports import RunRow, RunViews
from benchwright_shared.refusal import Refused

# What another account may see of a run: by link (unlisted) or listed too (public).
SHARED = ("unlisted", "public")


async def owned_run(
    views: RunViews, account: str, run_id: str, *, field: str = "run_id", reading: bool = False
) -> RunRow:
    """The ``account``'s run ``run_id``; with ``reading``, also another account's shared
    run. Anything else answers exactly as a missing run does (404 naming ``field``)."""
    row = await views.run(run_id)
    mine = row is not None and row["account"] == account
    shared = row is not None and reading and row.get("visibility") in SHARED
    if row is None or not (mine or shared):
        raise Refused(404, "run not found", f"no run {run_id!r}", field=field)
    return row
