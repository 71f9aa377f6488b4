"""Which rows a replay runs on: the parent's snapshot, or a newer one of its rolling
subset (decision 0021), and where task ids sit in a snapshot's rows."""

from benchwright_gateway.ports import Registry
from benchwright_shared.contracts import GetSubsetRows
from benchwright_shared.contracts.registry import ReadSubset

ROWS_PER_QUERY = 200  # the most GetSubsetRows answers at once


async def current_snapshot(registry: Registry, account: str, pinned: str | None) -> str | None:
    """The snapshot a replay runs on when the parent's (``pinned``) is no longer its
    rolling subset's current one; None when the parent's rows are still the rows to
    run (a frozen subset, a built-in, or one the caller can no longer read)."""
    if not pinned:
        return None
    answer = await registry.subset(ReadSubset(account=account, subset_id=pinned))
    view = answer.subset
    if answer.problem or view is None or not view.rolling or view.snapshot_id == pinned:
        return None
    return view.snapshot_id


async def row_indices(registry: Registry, snapshot: str, wanted: set[str]) -> dict[str, int]:
    """Where the ``wanted`` task ids sit in ``snapshot``'s rows (those it has), read a
    page at a time until all are found or the rows end."""
    found: dict[str, int] = {}
    offset = 0
    while wanted - found.keys():
        page = await registry.subset_rows(
            GetSubsetRows(subset_id=snapshot, offset=offset, limit=ROWS_PER_QUERY)
        )
        if page.problem or not page.rows:
            break
        for index, row in enumerate(page.rows, start=offset):
            task_id = str(row.get("task_id", index))  # as the runtime names a row
            if task_id in wanted:
                found.setdefault(task_id, index)
        offset += len(page.rows)
        if offset >= page.total:
            break
    return found
