"""BUILT subsets: created, read and edited over the authoring store.

``BuildApplication`` works on the same event store as ``AuthoringApplication``
(it saves through it, so the catalog read model follows every change): a BUILT
subset is an ``AuthoredSubset`` with its rows, a ``BuiltSubset`` with its
recipe and history, the ``AuthoredImpl`` generated from the recipe, and an
entry in the account's ``BuiltIndex`` (slug -> the subset it names now). Each
command saves all it touches in one transaction.

Who may do what: reading needs a benchmark the caller owns or a public one;
editing needs the owner, or an admin. Anything else reads as missing. A slug is
looked up among the caller's own BUILT subsets; an id (``sub_<12 hex>``) works
for anything the caller may see, retired subsets included (read-only).

Calls are synchronous; the service runs them on its store thread.
"""

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from benchwright_registry.application.authoring import AuthoringApplication
from benchwright_registry.domain.authoring import (
    AuthoredBenchmark,
    AuthoredImpl,
    AuthoredSubset,
    check_rows,
    check_slug,
    not_found,
    snapshot_id_for,
    tasks_jsonl,
)
from benchwright_registry.domain.build import (
    SUBSET_ID,
    BuiltIndex,
    BuiltSubset,
    built_impl_id,
    check_note,
    check_recipe,
    default_trials,
    edit_entry,
    edit_rows,
    generate_code,
    merge_recipe,
    retired_error,
)
from benchwright_shared.contracts import BenchmarkResolution
from benchwright_shared.contracts.build import (
    BuiltSubsetView,
    CreateBuiltSubset,
    ReadRecipe,
    RecipeEdit,
    UpdateRecipe,
    UpdateSamples,
)
from benchwright_shared.hashing import sha256_hex
from benchwright_shared.refusal import Refused

Rows = list[dict[str, Any]]
Found = tuple[AuthoredBenchmark, AuthoredSubset, BuiltSubset]


def _now() -> datetime:
    return datetime.now(UTC)


class BuildApplication:
    """BUILT subsets: a recipe in, generated code and content-addressed ids out."""

    def __init__(self, authoring: AuthoringApplication, runner: str) -> None:
        self.authoring = authoring
        # The product runner's source: the part of every generated file after the recipe.
        self.runner = runner

    # -- plumbing ---------------------------------------------------------------------------
    def _built(self, subset_id: str) -> BuiltSubset | None:
        return self.authoring._get(BuiltSubset, BuiltSubset.create_id(subset_id))

    def _rows_of(self, subset_id: str) -> AuthoredSubset | None:
        return self.authoring._get(AuthoredSubset, AuthoredSubset.create_id(subset_id))

    def _index(self, account: str) -> BuiltIndex:
        found = self.authoring._get(BuiltIndex, BuiltIndex.create_id(account))
        return found or BuiltIndex(id=BuiltIndex.create_id(account), account=account)

    def _commit(self, *aggregates: Any) -> None:
        unique = {id(a): a for a in aggregates if a is not None}
        self.authoring._commit(*unique.values())

    def _retrying[T](self, fn: Callable[[], T]) -> T:
        return self.authoring._retrying(fn)

    def _find(self, account: str, admin: bool, ref: str, *, owner: bool) -> Found:
        """The BUILT subset ``ref`` (an id, or a slug of the caller's) names, if the caller
        may see it (``owner``: may change it). Anything else is the same 404."""
        if SUBSET_ID.fullmatch(ref):
            ids = [ref]
        else:
            found = self.authoring._get(BuiltIndex, BuiltIndex.create_id(account))
            ids = found.lookup(ref) if found is not None else []
        matches: list[Found] = []
        for subset_id in ids:
            built, subset = self._built(subset_id), self._rows_of(subset_id)
            if built is None or subset is None or subset.deleted:
                continue
            bm = self.authoring._benchmark(built.benchmark_id)
            if bm is None:
                continue
            mine = bm.account == account or admin
            if mine or (not owner and self.authoring.public_runs(benchmark_id=bm.benchmark_id) > 0):
                matches.append((bm, subset, built))
        if len(matches) > 1:
            raise Refused(
                409,
                "ambiguous slug",
                f"{len(matches)} of your benchmarks have a BUILT subset {ref!r}: name it by id "
                f"({', '.join(m[2].subset_id for m in matches)})",
                field="subset",
                code="ambiguous",
            )
        if not matches:
            raise not_found("BUILT subset", ref, "subset")
        return matches[0]

    def _generated(
        self, bm: AuthoredBenchmark, subset_id: str, recipe: dict[str, Any], note: str
    ) -> tuple[str, list[Any]]:
        """The impl generated from ``recipe`` for ``subset_id`` (made, restored or found)."""
        code = generate_code(recipe, self.runner)
        impl_id = built_impl_id(subset_id, code)
        impl = self.authoring._get(AuthoredImpl, AuthoredImpl.create_id(impl_id))
        label = "generated from the recipe"
        if impl is None:
            impl = AuthoredImpl(
                id=AuthoredImpl.create_id(impl_id),
                impl_id=impl_id,
                benchmark_id=bm.benchmark_id,
                subset_id=subset_id,
                account=bm.account,
                label=label,
                description=note,
                code=code,
                sha256=sha256_hex(code),
            )
        else:
            impl.restore(label=label, description=note)
        bm.add_impl(impl_id, False)
        return impl_id, [impl, bm]

    @staticmethod
    def _view(built: BuiltSubset, subset: AuthoredSubset) -> BuiltSubsetView:
        latest = subset.latest
        return BuiltSubsetView(
            subset_id=built.subset_id,
            benchmark_id=built.benchmark_id,
            slug=built.slug,
            name=subset.name,
            owner=built.account,
            task_count=int(latest["task_count"]),
            content_sha256=str(latest["content_sha256"]),
            config=dict(built.recipe),
            impl_id=built.impl_id,
            default_trials=default_trials(built.recipe),
            retired=built.retired,
            successor_id=built.successor_id,
            predecessor_id=built.predecessor_id,
            history=[RecipeEdit.model_validate(h) for h in built.history],
            created_at=built.created_on,
            updated_at=built.updated_at,
        )

    # -- commands and queries ---------------------------------------------------------------
    def create(self, command: CreateBuiltSubset, rows: Rows) -> tuple[BuiltSubsetView, bool]:
        """A BUILT subset of the caller's benchmark: its rows, its recipe, its generated impl.

        Content-addressed like any subset: the same rows under the same slug with the
        same recipe answer the existing one (``False``); another recipe is a 409 (edit it
        with ``update_recipe``).
        """

        def create() -> tuple[BuiltSubsetView, bool]:
            bm = self.authoring._owned(command.account, command.benchmark_id, "benchmark_id")
            check_slug(command.slug)
            if not rows:
                raise Refused(
                    400,
                    "no tasks",
                    "a BUILT subset needs at least one task row",
                    field="tasks",
                    code="invalid_argument",
                )
            check_rows(rows)
            recipe = check_recipe(command.recipe)
            note = check_note(command.note)
            content = sha256_hex(tasks_jsonl(rows))
            subset_id = snapshot_id_for(bm.benchmark_id, command.slug, content)
            subset, built = self._rows_of(subset_id), self._built(subset_id)
            if subset is not None and not subset.deleted:
                return self._existing(subset, built, recipe), False
            bm.claim_slug(command.slug, subset_id)
            at = _now()
            pending: list[Any] = []
            fields: dict[str, Any] = {
                "name": command.name or command.slug,
                "description": command.description,
                "rolling": False,
                "grader": None,
                "grader_impl_id": None,
                "default_trials": None,
            }
            if subset is not None:
                subset.restore(rows, at=at, **fields)
            else:
                subset = AuthoredSubset(
                    id=AuthoredSubset.create_id(subset_id),
                    subset_id=subset_id,
                    benchmark_id=bm.benchmark_id,
                    account=command.account,
                    slug=command.slug,
                    rows=rows,
                    content_sha256=content,
                    at=at,
                    **fields,
                )
                pending.append(self.authoring._snapshot_record(subset_id, subset_id, len(rows)))
            impl_id, generated = self._generated(bm, subset_id, recipe, note)
            entry = edit_entry(
                "created",
                at=at,
                note=note,
                by=command.account,
                subset_id=subset_id,
                impl_id=impl_id,
                changes=recipe,
            )
            if built is None:
                built = BuiltSubset(
                    id=BuiltSubset.create_id(subset_id),
                    subset_id=subset_id,
                    benchmark_id=bm.benchmark_id,
                    account=command.account,
                    slug=command.slug,
                    recipe=recipe,
                    impl_id=impl_id,
                    predecessor_id=None,
                    history=[entry],
                    at=at,
                )
            else:  # deleted, now uploaded again: live, with a fresh start to its history
                built.revive(
                    recipe=recipe, impl_id=impl_id, predecessor_id=None, history=[entry], at=at
                )
            index = self._index(command.account)
            index.point(command.slug, bm.benchmark_id, subset_id)
            self._commit(subset, built, index, *pending, *generated)
            return self._view(built, subset), True

        return self._retrying(create)

    def _existing(
        self, subset: AuthoredSubset, built: BuiltSubset | None, recipe: dict[str, Any]
    ) -> BuiltSubsetView:
        """What a create that names an existing subset's rows answers."""
        if built is None:
            raise Refused(
                409,
                "subset exists",
                f"subset {subset.subset_id} already holds these tasks with a hand-written "
                "scorer; use another slug for a BUILT subset",
                field="slug",
                code="slug_taken",
            )
        if built.retired:
            raise retired_error(built.subset_id, built.successor_id)
        if built.recipe != recipe:
            raise Refused(
                409,
                "recipe differs",
                f"BUILT subset {built.subset_id} exists with another recipe; change it with "
                f"PATCH /v1/build/subsets/{built.slug}/recipe",
                field="recipe",
                code="recipe_differs",
            )
        return self._view(built, subset)

    def read(self, query: ReadRecipe) -> BuiltSubsetView:
        """A BUILT subset's recipe, current impl and history (retired ones too, by id)."""
        _, subset, built = self._find(query.account, query.admin, query.subset, owner=False)
        return self._view(built, subset)

    def update_recipe(self, command: UpdateRecipe) -> tuple[BuiltSubsetView, bool]:
        """Change recipe knobs: the subset stays, the generated impl (and its id) moves.

        The same recipe again changes nothing (``False``). A retired subset is a 409.
        """

        def change() -> tuple[BuiltSubsetView, bool]:
            bm, subset, built = self._find(
                command.account, command.admin, command.subset, owner=True
            )
            built.check_live()
            note = check_note(command.note)
            recipe = merge_recipe(built.recipe, command.config)
            if recipe == built.recipe:
                return self._view(built, subset), False
            impl_id, generated = self._generated(bm, subset.subset_id, recipe, note)
            built.change_recipe(recipe, impl_id, note=note, by=command.account, at=_now())
            self._commit(built, *generated)
            return self._view(built, subset), True

        return self._retrying(change)

    def update_samples(self, command: UpdateSamples, upsert: Rows) -> tuple[BuiltSubsetView, bool]:
        """Upsert and remove rows: a new subset (the content address of the edited rows)
        carrying the recipe forward; the old one retires, keeping the runs that pinned it.

        Rows that end up as they were change nothing (``False``).
        """

        def change() -> tuple[BuiltSubsetView, bool]:
            bm, old, built = self._find(command.account, command.admin, command.subset, owner=True)
            built.check_live()
            note = check_note(command.note)
            rows, upserted, removed = edit_rows(old.rows, upsert, command.remove)
            if rows == old.rows:
                return self._view(built, old), False
            content = sha256_hex(tasks_jsonl(rows))
            new_id = snapshot_id_for(bm.benchmark_id, built.slug, content)
            at = _now()
            pending: list[Any] = []
            target = self._rows_of(new_id)
            if target is None:
                target = AuthoredSubset(
                    id=AuthoredSubset.create_id(new_id),
                    subset_id=new_id,
                    benchmark_id=bm.benchmark_id,
                    account=old.account,
                    slug=built.slug,
                    name=old.name,
                    description=old.description,
                    rolling=False,
                    grader=None,
                    grader_impl_id=None,
                    default_trials=None,
                    rows=rows,
                    content_sha256=content,
                    at=at,
                )
                pending.append(self.authoring._snapshot_record(new_id, new_id, len(rows)))
            elif target.deleted:
                target.restore(
                    rows,
                    name=old.name,
                    description=old.description,
                    rolling=False,
                    grader=None,
                    grader_impl_id=None,
                    default_trials=None,
                    at=at,
                )
            # else: an earlier subset of this lineage: the rows came back to it.
            bm.release_slug(built.slug)
            bm.claim_slug(built.slug, new_id)
            impl_id, generated = self._generated(bm, new_id, built.recipe, note)
            entry = edit_entry(
                "samples",
                at=at,
                note=note,
                by=command.account,
                subset_id=new_id,
                impl_id=impl_id,
                from_subset_id=old.subset_id,
                upserted=upserted,
                removed=removed,
            )
            history = [*built.history, entry]
            successor = self._built(new_id)
            if successor is None:
                successor = BuiltSubset(
                    id=BuiltSubset.create_id(new_id),
                    subset_id=new_id,
                    benchmark_id=bm.benchmark_id,
                    account=built.account,
                    slug=built.slug,
                    recipe=built.recipe,
                    impl_id=impl_id,
                    predecessor_id=old.subset_id,
                    history=history,
                    at=at,
                )
            else:
                successor.revive(
                    recipe=built.recipe,
                    impl_id=impl_id,
                    predecessor_id=old.subset_id,
                    history=history,
                    at=at,
                )
            built.retire(new_id, entry)
            index = self._index(built.account)
            index.point(built.slug, bm.benchmark_id, new_id)
            self._commit(target, successor, built, index, *pending, *generated)
            return self._view(successor, target), True

        return self._retrying(change)

    # -- what a pinned launch resolves to ---------------------------------------------------
    def resolve(
        self, account: str, benchmark: str, subset: str | None, impl: str | None
    ) -> BenchmarkResolution | None:
        """``AuthoringApplication.resolve``, BUILT-aware.

        A BUILT subset runs its generated impl when the launch names none, with the
        recipe's trials as the default and its ``run_timeout`` as the task ceiling.
        A retired one answers 409 ``subset_retired`` naming its successor, where a
        merely unknown subset is a 404.
        """
        try:
            found = self.authoring.resolve(account, benchmark, subset, impl)
        except Refused as exc:
            if exc.status == 404 and exc.field == "subset" and subset is not None:
                self._refuse_retired(account, benchmark, subset)
            raise
        if found is None or found.subset_id is None:
            return found
        built = self._built(found.subset_id)
        if built is None or built.retired:
            return found
        return found.model_copy(
            update={
                "impl_id": built.impl_id if impl is None else found.impl_id,
                "default_trials": default_trials(built.recipe),
                "task_timeout_s": float(built.recipe["run_timeout"]),
            }
        )

    def _refuse_retired(self, account: str, benchmark: str, subset: str) -> None:
        built = self._built(subset) if SUBSET_ID.fullmatch(subset) else None
        if built is None or not built.retired:
            return
        bm = self.authoring._resolve_benchmark(account, benchmark)
        if bm is not None and bm.benchmark_id == built.benchmark_id:
            raise retired_error(subset, built.successor_id) from None
