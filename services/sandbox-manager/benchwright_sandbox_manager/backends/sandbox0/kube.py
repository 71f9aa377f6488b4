"""The official ``kubernetes`` client as sandbox0 uses it. Every call blocks: run it in a thread.

The client is imported here only, and only once a cluster is configured: the
sandbox-manager starts (and runs ``local`` sandboxes) without touching it.
"""

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from benchwright_sandbox_manager.ports import BackendError
from benchwright_shared.settings import Settings

log = logging.getLogger(__name__)

# (connect, read) seconds for every API request.
API_TIMEOUT = (10, 60)
# How long one websocket read waits before looking at ``cancel`` again.
POLL_S = 0.1
# Stdin goes out in frames of at most this many bytes.
FRAME_BYTES = 1 << 16
# A websocket write (or a frame's read) that stalls this long fails the exec.
IO_TIMEOUT_S = 120.0
PING_S = 30.0
STDOUT, STDERR, STATUS = 1, 2, 3
IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"
IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
HINT = (
    "set BW_KUBE_CONFIG to a kubeconfig file for the cluster (and BW_KUBE_CONTEXT "
    "for a context other than its current one), or run the sandbox-manager inside the "
    "cluster with a service account allowed to manage pods, pods/exec and networkpolicies"
)

Sink = Callable[[bytes], object]


class KubeApiError(BackendError):
    """The API server answered a request with an error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class UnreachableError(BackendError):
    """The API server could not be reached (or the exec websocket not opened)."""


def load(settings: Settings) -> "Cluster | str":
    """A client for the configured cluster, or why there is none (for ``create`` to say)."""
    path = settings.kube_config
    if path is None and not (os.environ.get(IN_CLUSTER_ENV) and os.path.exists(IN_CLUSTER_TOKEN)):
        return f"no Kubernetes cluster is configured: {HINT}"
    if path is not None and not path.is_file():
        return f"BW_KUBE_CONFIG names {str(path)!r}, which is not a file: {HINT}"
    try:
        from kubernetes import client, config
    except ImportError as exc:
        return f"the kubernetes package is not installed ({exc}): pip install kubernetes"
    configuration = client.Configuration()
    try:
        if path is not None:
            config.load_kube_config(
                config_file=str(path),
                context=settings.kube_context,
                client_configuration=configuration,
                persist_config=False,
            )
        else:
            config.load_incluster_config(client_configuration=configuration)
    except Exception as exc:  # the loader raises anything from ConfigException to yaml errors
        where = f"the kubeconfig {str(path)!r} (BW_KUBE_CONFIG)" if path else "in-cluster config"
        return f"cannot load {where}: {exc}; {HINT}"
    return Cluster(configuration)


def _message(body: Any) -> str | None:
    try:
        message = json.loads(body).get("message")
    except (TypeError, ValueError, AttributeError):
        return None
    return str(message) if message else None


def _reason(exc: Any) -> str:
    """The API server's own message from an ``ApiException``, else its reason.

    A refused exec websocket comes as ``Handshake status <code> <reason> -+-+-
    <headers> -+-+- <body>``: that becomes ``<code> <the body's message>``.
    """
    reason = str(getattr(exc, "reason", exc))
    if reason.startswith("Handshake status "):
        parts = reason.split(" -+-+- ")
        code = parts[0].removeprefix("Handshake status ").split(" ")[0]
        body = parts[-1].removeprefix("b'").removesuffix("'") if len(parts) > 1 else ""
        return f"{code} {_message(body) or parts[0]}"
    return _message(getattr(exc, "body", None)) or reason


class Cluster:
    """One cluster's API: pods, network policies, and exec into a pod's container."""

    def __init__(self, configuration: Any) -> None:
        from kubernetes import client

        self.configuration = configuration
        self.api_client = client.ApiClient(configuration)
        self.core = client.CoreV1Api(self.api_client)
        self.networking = client.NetworkingV1Api(self.api_client)

    @property
    def server(self) -> str:
        return str(self.configuration.host)

    def close(self) -> None:
        self.api_client.close()

    def _call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return method(*args, _request_timeout=API_TIMEOUT, **kwargs)
        except ApiException as exc:
            if not exc.status:
                raise UnreachableError(f"{self.server}: {_reason(exc)}") from exc
            raise KubeApiError(exc.status, f"{exc.status} {_reason(exc)}") from exc
        except (HTTPError, OSError) as exc:
            raise UnreachableError(f"{self.server}: {exc}") from exc

    def _absent_is_none(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return self._call(method, *args, **kwargs)
        except KubeApiError as exc:
            if exc.status == 404:
                return None
            raise

    # -- objects ------------------------------------------------------------------
    def create_pod(self, namespace: str, body: dict[str, Any]) -> Any:
        return self._call(self.core.create_namespaced_pod, namespace, body)

    def read_pod(self, namespace: str, name: str) -> Any:
        """The pod, or None when there is none."""
        return self._absent_is_none(self.core.read_namespaced_pod, name, namespace)

    def delete_pod(self, namespace: str, name: str) -> bool:
        """Delete with the shortest grace there is; False when there was no such pod.

        One second, not zero: zero is a forced deletion, the pod gone from the API
        while its containers may still run. With one, the pod is gone once the
        kubelet has killed them (``sleep`` ignores SIGTERM: SIGKILL a second later).
        """
        done = self._absent_is_none(
            self.core.delete_namespaced_pod, name, namespace, grace_period_seconds=1
        )
        return done is not None

    def create_policy(self, namespace: str, body: dict[str, Any]) -> Any:
        return self._call(self.networking.create_namespaced_network_policy, namespace, body)

    def read_policy(self, namespace: str, name: str) -> Any:
        return self._absent_is_none(self.networking.read_namespaced_network_policy, name, namespace)

    def replace_policy(self, namespace: str, name: str, body: dict[str, Any]) -> Any:
        return self._call(self.networking.replace_namespaced_network_policy, name, namespace, body)

    def delete_policy(self, namespace: str, name: str) -> bool:
        done = self._absent_is_none(
            self.networking.delete_namespaced_network_policy, name, namespace
        )
        return done is not None

    # -- exec -----------------------------------------------------------------------
    def exec(
        self,
        namespace: str,
        pod: str,
        command: list[str],
        payload: bytes,
        on_stdout: Sink,
        on_stderr: Sink,
        cancel: threading.Event,
    ) -> dict[str, Any] | None:
        """Run ``command`` in the pod's container, write ``payload`` to its stdin, pump
        its output into the sinks until it ends (or ``cancel`` is set).

        Returns the status the API server sent on the error channel (``Success``, or
        ``Failure`` with the exit code among its causes), or None when the stream
        ended without one (the pod went away, or ``cancel``).
        """
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException
        from kubernetes.stream import stream

        # ``stream`` swaps the ApiClient's request method while it connects: a client
        # of its own keeps that away from concurrent REST calls.
        api_client = client.ApiClient(self.configuration)
        try:
            try:
                ws = stream(
                    client.CoreV1Api(api_client).connect_get_namespaced_pod_exec,
                    pod,
                    namespace,
                    command=command,
                    stdin=True,
                    stdout=True,
                    stderr=True,
                    tty=False,
                    binary=True,
                    _preload_content=False,
                )
            except (ApiException, AttributeError) as exc:
                # The client turns a failed handshake's ApiException (no body) into an
                # AttributeError while decoding that body: the ApiException is its context.
                failure = exc if isinstance(exc, ApiException) else exc.__context__
                if not isinstance(failure, ApiException):
                    raise
                raise UnreachableError(_reason(failure)) from failure
            try:
                return self._pump(ws, payload, on_stdout, on_stderr, cancel)
            finally:
                ws.close()
        finally:
            api_client.close()

    @staticmethod
    def _pump(
        ws: Any, payload: bytes, on_stdout: Sink, on_stderr: Sink, cancel: threading.Event
    ) -> dict[str, Any] | None:
        from websocket import WebSocketException

        ws.sock.settimeout(IO_TIMEOUT_S)
        sinks = {STDOUT: on_stdout, STDERR: on_stderr}

        def drain() -> None:
            for channel, sink in sinks.items():
                data = ws.read_channel(channel)
                if data:
                    sink(data)

        try:
            # The launcher reads its whole payload before anything comes back.
            for start in range(0, len(payload), FRAME_BYTES):
                if cancel.is_set():
                    return None
                ws.write_stdin(payload[start : start + FRAME_BYTES])
            pinged = time.monotonic()
            while ws.is_open() and not cancel.is_set():
                ws.update(timeout=POLL_S)
                drain()
                if time.monotonic() - pinged > PING_S:
                    # A quiet command's stream must not look idle to a proxy on the way.
                    ws.sock.ping()
                    pinged = time.monotonic()
            drain()
        except (WebSocketException, OSError) as exc:
            log.info("exec stream ended: %s", exc)
        try:
            raw = ws.read_channel(STATUS)
        except (WebSocketException, OSError):
            raw = b""
        if not raw:
            return None
        try:
            status: dict[str, Any] = json.loads(raw)
        except ValueError:
            return {"status": "Failure", "message": raw.decode(errors="replace")}
        return status


def exit_code(status: dict[str, Any]) -> int | None:
    """The exit code a ``Status`` from the error channel reports; None if it reports none."""
    if status.get("status") == "Success":
        return 0
    for cause in (status.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            try:
                return int(cause.get("message"))
            except (TypeError, ValueError):
                return None
    return None
