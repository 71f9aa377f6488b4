"""BUILT subsets over request/reply: create, read the recipe, edit it, edit the samples.

Thin, like ``handlers``: read the message (and the rows' upload), call the
``BuildApplication`` on the store thread, answer. A refusal is raised, never caught
here: the bus answers it as the reply's ``problem``.
"""

from collections.abc import Callable
from typing import Any

from faststream.nats import NatsRouter

from benchwright_registry.application import RegistryApplication
from benchwright_registry.application.build import BuildApplication
from benchwright_registry.handlers import (
    QUEUE,
    Runtime,
    discard_upload,
    read_upload,
)
from benchwright_shared import subjects
from benchwright_shared.contracts.build import (
    BuildAnswer,
    CreateBuiltSubset,
    ReadRecipe,
    UpdateRecipe,
    UpdateSamples,
)
from benchwright_shared.contracts.registry import TasksUpload
from benchwright_shared.refusal import Refused

Rows = list[dict[str, Any]]


def register(router: NatsRouter, rt: Runtime) -> None:
    """Answer the four BUILT subjects on ``router``."""

    def build(app: RegistryApplication) -> BuildApplication:
        if app.build is None:
            raise Refused(503, "authoring unavailable", "this registry has no store")
        return app.build

    async def answer(
        upload: TasksUpload | None, fn: Callable[[BuildApplication, Rows], BuildAnswer]
    ) -> BuildAnswer:
        js = rt.jetstream()
        try:
            rows = await read_upload(js, upload) if upload is not None else []
            app = await rt.ready()
            return await rt.store.run(lambda: fn(build(app), rows))
        finally:
            await discard_upload(js, upload)

    @router.subscriber(subjects.CREATE_BUILT_SUBSET, queue=QUEUE)
    async def create(command: CreateBuiltSubset) -> BuildAnswer:
        def run(app: BuildApplication, rows: Rows) -> BuildAnswer:
            view, created = app.create(command, rows)
            return BuildAnswer(built=view, changed=created)

        return await answer(command.tasks, run)

    @router.subscriber(subjects.READ_RECIPE, queue=QUEUE)
    async def read(query: ReadRecipe) -> BuildAnswer:
        return await answer(None, lambda app, _: BuildAnswer(built=app.read(query)))

    @router.subscriber(subjects.UPDATE_RECIPE, queue=QUEUE)
    async def update_recipe(command: UpdateRecipe) -> BuildAnswer:
        def run(app: BuildApplication, _: Rows) -> BuildAnswer:
            view, changed = app.update_recipe(command)
            return BuildAnswer(built=view, changed=changed)

        return await answer(None, run)

    @router.subscriber(subjects.UPDATE_SAMPLES, queue=QUEUE)
    async def update_samples(command: UpdateSamples) -> BuildAnswer:
        def run(app: BuildApplication, rows: Rows) -> BuildAnswer:
            view, changed = app.update_samples(command, rows)
            return BuildAnswer(built=view, changed=changed)

        return await answer(command.upsert, run)
