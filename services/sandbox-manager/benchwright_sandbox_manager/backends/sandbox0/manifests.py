"""What sandbox0 asks Kubernetes for: names, the Pod, its NetworkPolicy, a command's env.

Pure functions over plain dicts (the client accepts them as request bodies), so
that tests can read exactly what went to the cluster.
"""

import hashlib
import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

from benchwright_sandbox_manager.backends.forwarding import MODEL_URL, NO_PROXY_VARS, PROXY_VARS
from benchwright_sandbox_manager.ports import BackendError, SandboxLimits

SANDBOX_LABEL = "benchwright.dev/sandbox"
ROLE_LABEL = "benchwright.dev/role"
MANAGED = {"app.kubernetes.io/managed-by": "benchwright"}
CONTAINER = "sandbox"
WORKDIR = "/work"
TMPDIR = "/tmp"
BASE_ENV = {
    "LANG": "C.UTF-8",
    "PYTHONUNBUFFERED": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "HOME": WORKDIR,
    # The runtime (bench_task, bench_runner) sits at the top of the sandbox.
    "PYTHONPATH": WORKDIR,
}
# SandboxLimits has no core count: one core per sandbox, a quarter of it reserved.
CPU_LIMIT = "1"
CPU_REQUEST = "250m"
MEMORY_REQUEST_MB = 256
# Nothing answers DNS here, and the NetworkPolicy lets no query out either.
NO_DNS = "127.0.0.1"
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass(frozen=True, order=True)
class Target:
    """An address a sandbox may open TCP connections to."""

    ip: str
    port: int

    @property
    def cidr(self) -> str:
        return f"{self.ip}/{ipaddress.ip_address(self.ip).max_prefixlen}"


def object_name(sandbox_id: str) -> str:
    """The Pod's (and its NetworkPolicy's) name: a DNS label, unique per sandbox id."""
    slug = re.sub(r"[^a-z0-9]+", "-", sandbox_id.lower()).strip("-")[:40].strip("-")
    digest = hashlib.sha256(sandbox_id.encode()).hexdigest()[:10]
    return f"bw-{slug}-{digest}" if slug else f"bw-{digest}"


def label_value(value: str) -> str:
    if len(value) > 63 or not LABEL_VALUE.match(value):
        raise BackendError(f"{value!r} cannot be a Kubernetes label value")
    return value


def labels(sandbox_id: str, role: str | None = None) -> dict[str, str]:
    found = {**MANAGED, SANDBOX_LABEL: label_value(sandbox_id)}
    if role:
        found[ROLE_LABEL] = label_value(role)
    return found


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def url_address(url: str) -> tuple[str, int] | None:
    """``(host, port)`` of an http(s) URL, or None for anything else."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname, port


def with_host(url: str, host: str) -> str:
    """``url`` with its host replaced (credentials and port kept)."""
    parts: SplitResult = urlsplit(url)
    userinfo, at, _ = parts.netloc.rpartition("@")
    port = f":{parts.port}" if parts.port else ""
    shown = f"[{host}]" if ":" in host else host
    return urlunsplit(parts._replace(netloc=f"{userinfo}{at}{shown}{port}"))


def reached_at(url: str, injector_url: str) -> str:
    """A proxy URL on loopback is the injector as this host sees it (a run's URL carries
    its key as user info): the same URL at the injector's address as pods reach it."""
    address, injector = url_address(url), url_address(injector_url)
    if address is None or injector is None:
        return url
    host = address[0]
    if host != "localhost" and not (is_ip(host) and ipaddress.ip_address(host).is_loopback):
        return url
    parts = urlsplit(url)
    userinfo, at, _ = parts.netloc.rpartition("@")
    where = f"[{injector[0]}]" if ":" in injector[0] else injector[0]
    return urlunsplit(parts._replace(netloc=f"{userinfo}{at}{where}:{injector[1]}"))


def command_env(env: Mapping[str, str], egress_proxy_url: str | None) -> dict[str, str]:
    """What a command sees: a minimal base, what it is given, and the way out.

    The rule of ``forwarding.plan_network``: ``egress_proxy_url`` becomes
    ``HTTP(S)_PROXY`` unless the command names its own proxy (one on loopback is
    moved to the injector's address, ``reached_at``), and the model proxy is then
    kept off it through ``NO_PROXY``. PATH is the image's (the launcher fills it
    in) unless the command sets one.
    """
    out = {**BASE_ENV, **env}
    if egress_proxy_url and not any(out.get(var) for var in PROXY_VARS):
        out.update(dict.fromkeys(PROXY_VARS, egress_proxy_url))
    for var in PROXY_VARS:
        if out.get(var) and egress_proxy_url:
            out[var] = reached_at(out[var], egress_proxy_url)
    if any(out.get(var) for var in PROXY_VARS):
        direct = ["localhost", "127.0.0.1"]
        model = url_address(out.get(MODEL_URL, ""))
        if model and model[0] not in direct:
            direct.append(model[0])
        given = [h for var in NO_PROXY_VARS for h in out.get(var, "").split(",") if h]
        out.update(dict.fromkeys(NO_PROXY_VARS, ",".join(dict.fromkeys([*given, *direct]))))
    return out


def routed_vars(env: Mapping[str, str]) -> list[str]:
    """The variables whose URLs a sandbox must be able to reach (as ``local`` forwards)."""
    return [var for var in (MODEL_URL, *PROXY_VARS) if url_address(env.get(var, ""))]


def pod_manifest(
    *,
    name: str,
    namespace: str,
    sandbox_id: str,
    role: str | None,
    image: str,
    limits: SandboxLimits,
    uid: int,
    host_aliases: Mapping[str, str],
    dirs: Sequence[str] = (),
) -> dict[str, Any]:
    """A pod that only sleeps: every command is an exec into it, under the launcher.

    Each of ``dirs`` (the sandbox's own absolute directories) is an ``emptyDir`` of
    its own, mounted at its path.
    """
    memory = f"{limits.memory_mb + limits.tmp_mb}Mi"  # /tmp is memory-backed
    disk = f"{limits.disk_mb}Mi"
    own = [(f"dir-{i}", place) for i, place in enumerate(dirs)]
    aliases: dict[str, list[str]] = {}
    for host, ip in sorted(host_aliases.items()):
        aliases.setdefault(ip, []).append(host)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(sandbox_id, role)},
        "spec": {
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "dnsPolicy": "None",
            "dnsConfig": {"nameservers": [NO_DNS]},
            "hostAliases": [{"ip": ip, "hostnames": hosts} for ip, hosts in aliases.items()],
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": uid,
                "runAsGroup": uid,
                "fsGroup": uid,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [
                {
                    "name": CONTAINER,
                    "image": image,
                    "command": ["sleep", "infinity"],
                    "workingDir": WORKDIR,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "readOnlyRootFilesystem": True,
                        "allowPrivilegeEscalation": False,
                        "privileged": False,
                        "capabilities": {"drop": ["ALL"]},
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "resources": {
                        "limits": {"cpu": CPU_LIMIT, "memory": memory, "ephemeral-storage": disk},
                        "requests": {
                            "cpu": CPU_REQUEST,
                            "memory": f"{MEMORY_REQUEST_MB}Mi",
                            "ephemeral-storage": disk,
                        },
                    },
                    "volumeMounts": [
                        {"name": "work", "mountPath": WORKDIR},
                        {"name": "tmp", "mountPath": TMPDIR},
                        *({"name": name, "mountPath": place} for name, place in own),
                    ],
                }
            ],
            "volumes": [
                {"name": "work", "emptyDir": {"sizeLimit": disk}},
                {
                    "name": "tmp",
                    "emptyDir": {"medium": "Memory", "sizeLimit": f"{limits.tmp_mb}Mi"},
                },
                *({"name": name, "emptyDir": {"sizeLimit": disk}} for name, _ in own),
            ],
        },
    }


def policy_manifest(
    *, name: str, namespace: str, sandbox_id: str, targets: Iterable[Target]
) -> dict[str, Any]:
    """Nothing in, and out only to ``targets`` (TCP): no DNS, no other pod, no internet."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(sandbox_id)},
        "spec": {
            "podSelector": {"matchLabels": {SANDBOX_LABEL: label_value(sandbox_id)}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [],
            "egress": [
                {
                    "to": [{"ipBlock": {"cidr": target.cidr}}],
                    "ports": [{"protocol": "TCP", "port": target.port}],
                }
                for target in sorted(set(targets))
            ],
        },
    }


def policy_targets(policy: Any) -> set[Target]:
    """The targets a NetworkPolicy (a client model) lets out, read as ``policy_manifest``
    writes them."""
    found: set[Target] = set()
    for rule in getattr(policy.spec, "egress", None) or []:
        ports = [p.port for p in rule.ports or [] if isinstance(p.port, int)]
        for peer in rule.to or []:
            block = peer.ip_block
            if block is None or "/" not in block.cidr:
                continue
            ip, _, prefix = block.cidr.partition("/")
            if is_ip(ip) and int(prefix) == ipaddress.ip_address(ip).max_prefixlen:
                found.update(Target(ip, port) for port in ports)
    return found
