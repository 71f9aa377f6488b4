"""Settings shared by every service, read from ``BW_``-prefixed environment variables."""

import os
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

# Where a local sandbox sees ``Settings.agent_bin_dir``.
AGENT_BIN_MOUNT = "/opt/benchwright/agent-bin"


def default_data_dir() -> Path:
    return Path.home() / ".benchwright"


def default_cache_dir() -> Path:
    """What can be rebuilt at any time (the built-in catalog), shared by data dirs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "benchwright"


class Settings(BaseSettings):
    """Where the platform keeps its state and how its parts find each other.

    Unset ``nats_url`` and ``database_url`` mean the embedded default: ``benchwright
    up`` starts its own nats-server and keeps SQLite files in ``data_dir``.
    """

    model_config = SettingsConfigDict(env_prefix="BW_", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir)
    # Derived files kept between starts; deleting it costs a slower start, nothing else.
    cache_dir: Path = Field(default_factory=default_cache_dir)
    nats_url: str | None = None
    database_url: str | None = None
    # Connections each store keeps open to PostgreSQL, and how many more it may open
    # for a moment: a copy of a service holds (stores) x (size + overflow) at most.
    postgres_pool_size: int = Field(default=1, ge=1, le=32)
    postgres_max_overflow: int = Field(default=1, ge=0, le=32)

    # ``benchwright serve`` answers /healthz and /readyz here (0: no health endpoint).
    health_port: int = 0

    gateway_host: str = "127.0.0.1"
    gateway_port: int = 8765
    # The largest request body the API reads (413 past it), and the larger one for
    # task uploads, which reach the object store in chunks rather than the bus whole.
    max_request_bytes: int = Field(default=512 * 1024, ge=1024)
    max_upload_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    public_base_url: str | None = None

    proxy_host: str = "127.0.0.1"
    proxy_port: int = 8766
    # The model endpoint's address as sandboxes reach it, when not where it listens:
    # remote backends (e2b, sandbox0) need a public or in-cluster address.
    proxy_public_url: str | None = None

    # The embedded runner's single account; several accounts are another issue.
    default_account: str = "acct_local"

    # Materialize: how many tasks a work sandbox runs at once.
    task_concurrency: int = 8
    # A single task's wall-clock ceiling inside the sandbox.
    task_timeout_s: float = 300.0
    # Materialize in the shared work sandbox (`sequential`), in a sandbox per task
    # (`fanout`, at most `task_concurrency` at once), or as the run's infrastructure
    # dictates (`auto`, see the orchestrator's `fanout.materialize_mode`).
    materialize_mode: Literal["auto", "sequential", "fanout"] = "auto"

    # How often a running pipeline compares cost and time against its limits.
    limit_check_interval_s: float = 2.0

    # The Driver: `builtin` (offline, no model) or `litellm` (an LLM with tools).
    # The litellm Driver's key is the orchestrator's own, never a model-under-test key.
    driver_default: str = "litellm"
    driver_model: str = "openrouter://deepseek/deepseek-v4-flash"
    driver_api_key: str | None = None
    driver_api_base: str | None = None

    # The offline `local` provider.
    local_model_threads: int = 1
    local_model_ctx: int = 2048
    # The command that runs the local model's worker process (JSON list); unset, the
    # proxy's own ``python -m benchwright_proxy.providers.local_worker``. Tests put
    # a worker that crashes here.
    local_model_worker: list[str] | None = None

    # Dollars per million tokens by `<provider>/<model>` (JSON), read by the proxy:
    # prices for self-hosted models and overrides of LiteLLM's table.
    model_prices: dict[str, dict[str, float]] = Field(default_factory=dict)

    # The vault's Fernet key (urlsafe base64, 32 bytes); without it one is made once
    # into the proxy's data directory (0600). Read by the proxy service only.
    vault_key: str | None = None

    # Billing. A run takes its platform spend (sandbox + Driver) times the markup
    # from the account's balance. Enforcing means a launch needs the floor ($1) and
    # runs halt when the balance or the monthly cap runs out; a self-hosted
    # deployment that pays its own bills leaves it off.
    billing_markup: float = 1.0
    billing_enforce: bool = False

    # Provider keys are read by the proxy service only.
    openrouter_api_key: str | None = None
    together_api_key: str | None = None

    # OpenTelemetry traces (docs/decisions/0039): exported where OTEL_EXPORTER_OTLP_ENDPOINT
    # is set, unless this says no (BW_TRACING=false).
    tracing: bool = True

    # JetStream consumer redelivery bound for failing handlers.
    max_deliver: int = 5
    # Replicas of every stream and bucket the platform creates: 3 on a 3-node
    # cluster, so losing one node loses nothing (a single server takes 1).
    nats_replicas: int = Field(default=1, ge=1, le=5)
    # A copy that stops heartbeating is taken for dead after this many seconds
    # (docs/decisions/0022): its sandboxes are replaced, its runs taken over.
    liveness_ttl_s: float = Field(default=5.0, ge=1.0, le=120.0)

    # The `local` sandbox backend (bubblewrap; docs/decisions/0013). Limits apply to
    # each command; CPU, memory and file size per process, processes per sandbox.
    sandbox_cpu_seconds: int = 600
    sandbox_memory_mb: int = 4096
    sandbox_file_size_mb: int = 1024
    sandbox_max_procs: int = 256
    # What a sandbox's own directory may hold; a command past it is killed.
    sandbox_disk_mb: int = 4096
    # The in-memory /tmp (and /dev/shm) each command gets; a sandbox's exec server
    # holds one for all the commands it runs.
    sandbox_tmp_mb: int = 256
    # ExecInSandbox commands run through one exec server per sandbox, started on its
    # first command, rather than a bubblewrap each (docs/decisions/0051).
    sandbox_exec_server: bool = True
    # Run scorers WITHOUT isolation when bubblewrap or namespaces are unavailable.
    # Only for code you trust: the scorer can read what the service's user can.
    sandbox_unisolated: bool = False
    sandbox_bwrap: str = "bwrap"
    # When the sandbox-manager runs as root, each sandbox runs as its own uid from
    # this base upwards (a hash of its id), never as root.
    sandbox_uid_base: int = 1_000_000
    # A host directory of agent CLIs (``claude``, ...) every local sandbox sees,
    # read-only, at ``AGENT_BIN_MOUNT``; Harbor's bridge puts it first on the PATH of
    # its installed agents (``harbor:claude-code``). The platform installs no agent.
    agent_bin_dir: Path | None = None
    # A fixed egress proxy (HTTP CONNECT) for sandboxes whose command names none;
    # runs get the injector's per-run address instead (``injector_*`` below).
    egress_proxy_url: str | None = None
    # The egress injector (mitmproxy) the proxy service runs for sandboxes.
    injector_enabled: bool = True
    injector_host: str = "127.0.0.1"
    injector_port: int = 0
    # Let sandboxes reach loopback and private addresses through the injector
    # (development and tests, where the "internet" is a local fake).
    injector_allow_internal: bool = False
    # An extra CA the injector trusts upstream, beside the public ones.
    injector_upstream_ca: Path | None = None
    # The injector's address as sandboxes reach it (``http://host:port``), when not
    # where it listens: the load balancer in front of several proxy copies.
    injector_public_url: str | None = None
    # Where the injector keeps its CA (certificate and key). Unset: the proxy's data
    # directory. Copies behind one address must share one CA: mount the same secret.
    injector_ca_dir: Path | None = None
    # Where a run's sandboxes live when its launch says `compute: default` (or nothing).
    # `auto` picks the first remote backend configured here (e2b, then sandbox0),
    # else `local`. The orchestrator resolves it at launch and records `backend`.
    sandbox_backend: Literal["local", "e2b", "sandbox0"] = "local"
    # What each backend charges per sandbox-second, in micro-dollars (concepts §8):
    # the sandbox-manager prices SandboxKilled.cost_micros with it.
    sandbox_rate_local_micros: int = 0
    sandbox_rate_e2b_micros: int = 28
    sandbox_rate_sandbox0_micros: int = 14

    # The `e2b` backend (https://e2b.dev). ``e2b_api_url`` points the SDK elsewhere
    # (a self-hosted E2B, or a test's fake); ``e2b_sandbox_url`` likewise for envd.
    e2b_api_key: str | None = None
    e2b_api_url: str | None = None
    e2b_sandbox_url: str | None = None
    e2b_domain: str | None = None
    e2b_template: str = "base"
    # The injector's address as e2b sandboxes reach it (the proxy must be public
    # for a remote backend); HTTP(S)_PROXY inside e2b sandboxes.
    e2b_egress_proxy_url: str | None = None

    # The `sandbox0` backend: pods on Kubernetes. ``kube_config`` is a kubeconfig
    # path; without it the in-cluster service account is used.
    kube_config: Path | None = None
    kube_context: str | None = None
    kube_namespace: str = "benchwright-sandboxes"
    kube_image: str = "python:3.12-slim"
    # The injector's address as pods reach it (a Service in the cluster).
    kube_egress_proxy_url: str | None = None

    @property
    def uses_postgres(self) -> bool:
        return bool(self.database_url and self.database_url.startswith("postgres"))

    @property
    def gateway_url(self) -> str:
        return self.public_base_url or f"http://{self.gateway_host}:{self.gateway_port}"

    def service_dir(self, service: str) -> Path:
        path = self.data_dir / service
        path.mkdir(parents=True, exist_ok=True)
        return path
