"""What a sandbox's pod may reach, and the environment that points a command there.

A pod starts able to reach the egress injector alone. A command given another
address (its model proxy in ``BW_MODEL_PROXY_URL``, a proxy it names itself) gets
it added to the pod's NetworkPolicy before it runs, as ``local`` builds a
forwarder for each: the addresses a command is told about are its only way out.
"""

import asyncio
import socket
from collections.abc import Mapping

from benchwright_sandbox_manager.backends.sandbox0.kube import Cluster, KubeApiError
from benchwright_sandbox_manager.backends.sandbox0.manifests import (
    Target,
    command_env,
    is_ip,
    object_name,
    policy_manifest,
    policy_targets,
    routed_vars,
    url_address,
    with_host,
)
from benchwright_sandbox_manager.ports import BackendError

CONFLICT_RETRIES = 3


class PodNetwork:
    """Each sandbox's allowed addresses, as its NetworkPolicy holds them."""

    def __init__(self, namespace: str, egress_proxy_url: str | None) -> None:
        self.namespace = namespace
        self.egress_proxy_url = egress_proxy_url
        # Host names the pods resolve through hostAliases (DNS is off): the injector's.
        self.aliases: dict[str, str] = {}
        self._allowed: dict[str, set[Target]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def resolve(self, host: str) -> str:
        """An address for ``host``, resolved here: a pod has no DNS."""
        if is_ip(host):
            return host
        if host in self.aliases:
            return self.aliases[host]
        loop = asyncio.get_running_loop()
        try:
            found = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise BackendError(f"cannot resolve {host!r} for a sandbox0 pod: {exc}") from exc
        return str(found[0][4][0])

    async def injector(self) -> tuple[set[Target], dict[str, str]]:
        """What a new pod may reach (the injector), and the hostAliases that name it."""
        address = url_address(self.egress_proxy_url or "")
        if address is None:
            return set(), {}
        host, port = address
        ip = await self.resolve(host)
        aliases = {} if is_ip(host) else {host: ip}
        self.aliases.update(aliases)
        return {Target(ip, port)}, aliases

    def created(self, sandbox_id: str, targets: set[Target]) -> None:
        self._allowed[sandbox_id] = set(targets)

    def forget(self, sandbox_id: str) -> None:
        self._allowed.pop(sandbox_id, None)
        self._locks.pop(sandbox_id, None)

    async def allow(self, cluster: Cluster, sandbox_id: str, targets: set[Target]) -> None:
        """Let the sandbox's pod reach ``targets`` too: its policy gains what it lacks."""
        async with self._locks.setdefault(sandbox_id, asyncio.Lock()):
            if targets <= self._allowed.get(sandbox_id, set()):
                return
            name = object_name(sandbox_id)
            for attempt in range(CONFLICT_RETRIES):
                policy = await asyncio.to_thread(cluster.read_policy, self.namespace, name)
                if policy is None:
                    raise BackendError(f"sandbox {sandbox_id} has no NetworkPolicy (killed?)")
                current = policy_targets(policy)
                if not targets <= current:
                    body = policy_manifest(
                        name=name,
                        namespace=self.namespace,
                        sandbox_id=sandbox_id,
                        targets=current | targets,
                    )
                    # Another replica may be adding its own: replace only what was read.
                    body["metadata"]["resourceVersion"] = policy.metadata.resource_version
                    try:
                        await asyncio.to_thread(cluster.replace_policy, self.namespace, name, body)
                    except KubeApiError as exc:
                        if exc.status == 409 and attempt + 1 < CONFLICT_RETRIES:
                            continue
                        raise
                self._allowed[sandbox_id] = current | targets
                return

    async def command_env(
        self, cluster: Cluster, sandbox_id: str, env: Mapping[str, str]
    ) -> dict[str, str]:
        """The command's environment (``manifests.command_env``), every address in it
        let through the pod's policy. A host name other than the injector's (which
        the pod resolves through hostAliases) is replaced by its address."""
        for key, value in env.items():
            if not key or "=" in key or "\0" in key or "\0" in value:
                raise BackendError(f"environment variable {key!r} cannot be passed on")
        given = dict(env)
        for var in routed_vars(given):
            host, _ = url_address(given[var]) or ("", 0)
            if not is_ip(host) and host not in self.aliases:
                given[var] = with_host(given[var], await self.resolve(host))
        out = command_env(given, self.egress_proxy_url)
        targets = set()
        for var in routed_vars(out):
            host, port = url_address(out[var]) or ("", 0)
            targets.add(Target(await self.resolve(host), port))
        await self.allow(cluster, sandbox_id, targets)
        return out
