"""What a command needs to reach the outside through the run's egress injector.

The injector's CA certificate goes into the sandbox under ``.bw/`` (left out of
snapshots) and every variable TLS clients commonly read points at it; the proxy
URL, carrying the run's proxy key, becomes HTTP(S)_PROXY. The backend then routes
that URL (``forwarding.plan_network`` for ``local``): the injector is the only
way out.
"""

from benchwright_sandbox_manager.backends.forwarding import PROXY_VARS
from benchwright_sandbox_manager.ports import SandboxBackend
from benchwright_shared.contracts import Egress

CA_FILE = ".bw/egress-ca.pem"
# Python's ssl, requests, curl, git, Node.js: each looks in its own place.
CA_VARS = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO")
NODE_CA_VAR = "NODE_EXTRA_CA_CERTS"


async def egress_env(
    backend: SandboxBackend, sandbox_id: str, egress: Egress | None
) -> dict[str, str]:
    """Put the CA into the sandbox and return the variables that route through the injector.

    Nothing (no variables, no file) without ``egress``: the command then has no way out.
    """
    if egress is None:
        return {}
    await backend.put_file(sandbox_id, CA_FILE, egress.ca_cert_pem.encode())
    ca = backend.inside_path(sandbox_id, CA_FILE)
    return {
        **dict.fromkeys(PROXY_VARS, egress.proxy_url),
        **dict.fromkeys(CA_VARS, ca),
        NODE_CA_VAR: ca,
    }
