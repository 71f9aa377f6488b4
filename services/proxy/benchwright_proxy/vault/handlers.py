"""The vault's questions, answered over request/reply (never a stream).

A refusal is raised, never caught here: the bus answers it as the reply's ``problem``.
"""

from collections.abc import Callable

from faststream.nats import NatsRouter

from benchwright_proxy.vault.application import VaultApplication
from benchwright_shared import subjects
from benchwright_shared.contracts.vault import (
    BlockedHostsView,
    DeleteSecret,
    HostPolicyView,
    PutSecret,
    ReadBlockedHosts,
    ReadHostPolicy,
    ReadSecrets,
    SecretAnswer,
    UpdateHostPolicy,
)
from benchwright_shared.store import BlockingStore


def register(router: NatsRouter, vault: VaultApplication, store: BlockingStore) -> None:
    async def run[T](fn: Callable[[], T]) -> T:
        return await store.run(fn)

    @router.subscriber(subjects.PUT_SECRET, queue="proxy")
    async def put_secret(command: PutSecret) -> SecretAnswer:
        return SecretAnswer(secret=await run(lambda: vault.put(command)))

    @router.subscriber(subjects.READ_SECRETS, queue="proxy")
    async def read_secrets(query: ReadSecrets) -> SecretAnswer:
        views = await run(lambda: vault.read(query.account, query.name))
        return SecretAnswer(secret=views[0] if query.name else None, secrets=views)

    @router.subscriber(subjects.DELETE_SECRET, queue="proxy")
    async def delete_secret(command: DeleteSecret) -> SecretAnswer:
        await run(lambda: vault.delete(command.account, command.name))
        return SecretAnswer()

    @router.subscriber(subjects.READ_HOST_POLICY, queue="proxy")
    async def read_policy(query: ReadHostPolicy) -> HostPolicyView:
        return await run(lambda: vault.host_policy(query.account))

    @router.subscriber(subjects.UPDATE_HOST_POLICY, queue="proxy")
    async def update_policy(command: UpdateHostPolicy) -> HostPolicyView:
        return await run(lambda: vault.update_host_policy(command))

    @router.subscriber(subjects.READ_BLOCKED_HOSTS, queue="proxy")
    async def blocked(query: ReadBlockedHosts) -> BlockedHostsView:
        data = await run(lambda: vault.blocked_hosts(query.account, query.run_id))
        return BlockedHostsView(data=data)
