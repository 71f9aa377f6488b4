"""The egress injector on real sockets: mitmproxy in front of echo upstreams on loopback,
with the proxy's real run bindings and vault behind its ports."""

import asyncio
import base64
import logging
import socket
import ssl
import stat
import statistics
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from benchwright_proxy.injector import EgressInjector, InjectorError
from benchwright_proxy.injector.guard import is_internal
from benchwright_shared.contracts.vault import SecretRule
from tests.proxy.test_injector_support import (
    Platform,
    Upstream,
    client,
    fronted_get,
    make_tls,
    running,
    timed_gets,
)

VALUE = "sk-or-v1-0123456789abcdef0123"
ROTATED = "sk-or-v1-rotated-9999999999"


@pytest.fixture(scope="module")
def tls_material(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return make_tls(tmp_path_factory.mktemp("upstream-tls"))


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    server = Upstream().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def tls_upstream(tls_material: tuple[Path, Path, Path]) -> Iterator[Upstream]:
    _, cert, key = tls_material
    server = Upstream(certfile=cert, keyfile=key).start()
    yield server
    server.stop()


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[Platform]:
    p = Platform(tmp_path / "data")
    yield p
    p.close()


@pytest.fixture
async def egress(
    platform: Platform, tmp_path: Path, tls_material: tuple[Path, Path, Path]
) -> AsyncIterator[EgressInjector]:
    injector = platform.injector(
        tmp_path / "data" / "proxy" / "mitm", upstream_ca=tls_material[0], refusal_interval=3600
    )
    async with running(injector):
        yield injector


def headers_of(response: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in response.json()["headers"]}


async def test_requests_without_a_valid_run_key_get_407(
    egress: EgressInjector, platform: Platform, upstream: Upstream, tls_upstream: Upstream
) -> None:
    run_id, key = platform.run()
    wrong = key.rsplit(".", 1)[0] + ".not-the-secret"
    before = len(upstream.seen) + len(tls_upstream.seen)
    # The run's model key opens the model API only: a sandbox given the egress key
    # alone (an agent's task) cannot spend the run's model budget, nor the reverse.
    model_key = platform.model_keys[run_id]
    for candidate in (None, wrong, "bw_proxy_nonsense", "", model_key):
        async with client(egress, candidate) as c:
            response = await c.get(upstream.url("/echo"))
            assert response.status_code == 407, candidate
            assert response.headers["proxy-authenticate"].startswith("Basic")
            # No tunnel either: the CONNECT itself is refused.
            with pytest.raises(httpx.ProxyError, match="407"):
                await c.get(tls_upstream.url("/echo"))
    assert len(upstream.seen) + len(tls_upstream.seen) == before
    async with client(egress, key) as c:
        assert (await c.get(upstream.url("/echo"))).status_code == 200


@pytest.mark.parametrize(
    ("kind", "target", "header", "expected"),
    [
        ("bearer", None, "authorization", f"Bearer {VALUE}"),
        ("header", "X-Api-Key", "x-api-key", VALUE),
        (
            "basic",
            "api",
            "authorization",
            "Basic " + base64.b64encode(f"api:{VALUE}".encode()).decode(),
        ),
        ("query", "key", None, VALUE),
    ],
)
@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_each_inject_kind_reaches_the_upstream(
    egress: EgressInjector,
    platform: Platform,
    upstream: Upstream,
    tls_upstream: Upstream,
    kind: str,
    target: str | None,
    header: str | None,
    expected: str,
    scheme: str,
) -> None:
    rule = SecretRule.model_validate(
        {"host_pattern": "127.0.0.1", "inject_kind": kind, "inject_target": target}
    )
    platform.put("api", VALUE, rule)
    _, key = platform.run()
    server = tls_upstream if scheme == "https" else upstream
    async with client(egress, key) as c:
        # The client's own credentials are replaced, its other query parameters kept.
        response = await c.get(
            server.url("/echo?q=1&key=mine"), headers={"Authorization": "Bearer mine"}
        )
    assert response.status_code == 200
    seen = headers_of(response)
    query = response.json()["query"]
    if header is None:
        assert ["key", expected] in query and ["q", "1"] in query and ["key", "mine"] not in query
    else:
        assert seen[header] == expected
        assert ["key", "mine"] in query
    assert "proxy-authorization" not in seen


@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_the_host_header_cannot_steer_a_rule_to_another_host(
    egress: EgressInjector,
    platform: Platform,
    upstream: Upstream,
    tls_upstream: Upstream,
    scheme: str,
) -> None:
    platform.put("openrouter", VALUE, SecretRule(host_pattern="openrouter.ai"))
    _, key = platform.run()
    server = tls_upstream if scheme == "https" else upstream
    async with client(egress, key) as c:
        response = await c.get(server.url("/echo"), headers={"Host": "openrouter.ai"})
    seen = headers_of(response)
    # The request went to 127.0.0.1 with the client's Host header, and without the secret.
    assert response.status_code == 200 and seen["host"] == "openrouter.ai"
    assert "authorization" not in seen


async def test_a_blocked_host_gets_403_and_its_refusals_are_counted_in_one_batch(
    egress: EgressInjector, platform: Platform, upstream: Upstream, tls_upstream: Upstream
) -> None:
    platform.block("localhost")
    run_id, key = platform.run()
    before = len(upstream.seen) + len(tls_upstream.seen)
    async with client(egress, key) as c:
        for _ in range(5):
            response = await c.get(upstream.url("/echo", host="localhost"))
            assert response.status_code == 403
            assert "localhost is blocked" in response.text
            assert "PATCH /v1/host-policy" in response.text
        # HTTPS is refused at CONNECT: nothing is tunnelled.
        with pytest.raises(httpx.ProxyError, match="403"):
            await c.get(tls_upstream.url("/echo", host="localhost"))
        # The same upstream by its address is allowed (default mode allow).
        assert (await c.get(upstream.url("/echo"))).status_code == 200
    assert len(upstream.seen) + len(tls_upstream.seen) == before + 1
    assert platform.recorded == []
    await egress.refusals.flush()
    assert platform.recorded == [("acct", {(run_id, "localhost"): 6})]
    (entry,) = platform.vault.blocked_hosts("acct", run_id)
    assert (entry.host, entry.seen_count) == ("localhost", 6)


async def test_refusals_are_flushed_on_a_timer(
    platform: Platform, tmp_path: Path, upstream: Upstream
) -> None:
    platform.block("localhost")
    _run_id, key = platform.run()
    async with running(platform.injector(tmp_path / "mitm", refusal_interval=0.1)) as egress:
        async with client(egress, key) as c:
            for _ in range(3):
                await c.get(upstream.url("/echo", host="localhost"))
        for _ in range(50):
            if platform.recorded:
                break
            await asyncio.sleep(0.05)
    counted = sum(n for _, refusals in platform.recorded for n in refusals.values())
    assert counted == 3 and platform.recorded[0][0] == "acct"


async def test_a_rotation_reaches_new_runs_and_not_running_ones(
    egress: EgressInjector, platform: Platform, upstream: Upstream, tls_upstream: Upstream
) -> None:
    platform.put("api", VALUE, SecretRule(host_pattern="127.0.0.1"))
    _, old_key = platform.run()

    async def bearer(key: str, server: Upstream) -> str:
        async with client(egress, key) as c:  # a new connection each time
            return headers_of(await c.get(server.url("/echo")))["authorization"]

    assert await bearer(old_key, upstream) == f"Bearer {VALUE}"
    platform.put("api", ROTATED, SecretRule(host_pattern="127.0.0.1"))
    _, new_key = platform.run()
    assert await bearer(new_key, upstream) == f"Bearer {ROTATED}"
    assert await bearer(old_key, upstream) == f"Bearer {VALUE}"
    assert await bearer(old_key, tls_upstream) == f"Bearer {VALUE}"
    # Pinned once per run, however many connections it opens.
    assert platform.pins == ["acct", "acct"]


async def test_proxy_credentials_never_reach_upstream_and_no_value_is_logged(
    egress: EgressInjector,
    platform: Platform,
    upstream: Upstream,
    tls_upstream: Upstream,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="mitmproxy")
    platform.put(
        "api", VALUE, SecretRule(host_pattern="127.0.0.1", inject_kind="query", inject_target="k")
    )
    platform.put(
        "basic",
        ROTATED,
        SecretRule(host_pattern="127.0.0.1", inject_kind="basic", inject_target="u"),
    )
    # A rule that cannot be applied: answered 502, logged without its value.
    platform.put(
        "broken",
        "sk-broken-value-12345",
        # Built without validation: the vault refuses it, the injector must too.
        SecretRule.model_construct(
            host_pattern="localhost", inject_kind="header", inject_target="Bad Name"
        ),
    )
    _, key = platform.run()
    plain, tls = len(upstream.seen), len(tls_upstream.seen)
    async with client(egress, key) as c:
        for server in (upstream, tls_upstream):
            assert (await c.get(server.url("/echo"))).status_code == 200
            # Keep-alive: later requests on the connection carry no secrets from the client.
            assert (await c.get(server.url("/echo"))).status_code == 200
        assert (await c.get(upstream.url("/echo", host="localhost"))).status_code == 502
    async with client(egress, "bw_proxy_wrong.key") as c:
        assert (await c.get(upstream.url("/echo"))).status_code == 407
    forwarded = upstream.seen[plain:] + tls_upstream.seen[tls:]
    assert len(forwarded) == 4 and all("proxy-authorization" not in dict(h) for h in forwarded)
    logged = caplog.text + "".join(r.getMessage() for r in caplog.records)
    assert "client connect" in logged  # mitmproxy's own logs were captured too
    basic = base64.b64encode(f"u:{ROTATED}".encode()).decode()
    for secret in (VALUE, ROTATED, basic, "sk-broken-value-12345", key, key.split(".")[-1]):
        assert secret not in logged


@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_a_streamed_response_passes_through_unbuffered(
    egress: EgressInjector,
    platform: Platform,
    upstream: Upstream,
    tls_upstream: Upstream,
    scheme: str,
) -> None:
    _, key = platform.run()
    server = tls_upstream if scheme == "https" else upstream
    async with client(egress, key) as c, c.stream("GET", server.url("/stream")) as response:
        chunks = response.aiter_raw()
        first = await anext(chunks)
        first_at = time.monotonic()
        rest = [chunk async for chunk in chunks]
    assert first.startswith(b"data: chunk 0")
    assert b"chunk 3" in b"".join(rest)
    # The first chunk was in the client's hands before the upstream sent its last.
    assert first_at < server.chunk_sent_at[-1]


async def test_an_untrusted_upstream_certificate_is_refused(
    platform: Platform, tmp_path: Path, tls_upstream: Upstream
) -> None:
    _, key = platform.run()
    # No upstream_ca: the test upstream's private CA is not trusted.
    seen = len(tls_upstream.seen)
    async with running(platform.injector(tmp_path / "mitm")) as egress, client(egress, key) as c:
        response = await c.get(tls_upstream.url("/echo"))
    assert response.status_code == 502 and "certificate verify failed" in response.text.lower()
    assert len(tls_upstream.seen) == seen


async def test_only_the_ca_certificate_is_offered_and_the_key_stays_private(
    egress: EgressInjector,
) -> None:
    cert = egress.ca_cert_path.read_text()
    assert cert.startswith("-----BEGIN CERTIFICATE-----") and "PRIVATE KEY" not in cert
    key_file = egress.confdir / "mitmproxy-ca.pem"
    assert "PRIVATE KEY" in key_file.read_text()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(egress.confdir.stat().st_mode) == 0o700


async def test_a_forgotten_run_is_cut_off_and_stop_closes_everything(
    platform: Platform,
    tmp_path: Path,
    tls_upstream: Upstream,
    tls_material: tuple[Path, Path, Path],
) -> None:
    run_id, key = platform.run()
    injector = platform.injector(tmp_path / "mitm", upstream_ca=tls_material[0])
    async with running(injector) as egress:
        with pytest.raises(InjectorError):
            await platform.injector(tmp_path / "other").start()
        async with client(egress, key) as c:
            assert (await c.get(tls_upstream.url("/echo"))).status_code == 200
            egress.forget_run(run_id)
            # Same tunnel, same connection: its identity is gone.
            assert (await c.get(tls_upstream.url("/echo"))).status_code == 407
        port = egress.port
    with pytest.raises(OSError):
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.close()
    # And it can start again.
    async with running(injector) as again, client(again, key) as c:
        assert (await c.get(tls_upstream.url("/echo"))).status_code == 200


async def test_added_latency_per_request_on_keep_alive(
    platform: Platform,
    tmp_path: Path,
    upstream: Upstream,
    tls_upstream: Upstream,
    tls_material: tuple[Path, Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Measured, not asserted: the median a request pays for going through the injector
    (host policy, pinned versions and one injected secret from the real vault)."""
    n = 300
    platform.put("api", VALUE, SecretRule(host_pattern="127.0.0.1"))
    _, key = platform.run()
    upstream_trust = ssl.create_default_context(cafile=str(tls_material[0]))
    injector = platform.injector(tmp_path / "mitm", upstream_ca=tls_material[0])
    async with running(injector) as egress:
        mitm_trust = ssl.create_default_context(cafile=str(egress.ca_cert_path))
        via = egress.proxy_url(key)

        def measure() -> dict[str, list[float]]:
            # Blocking clients on a worker thread: this loop is the injector's.
            return {
                "http direct": timed_gets(upstream.url("/echo"), n),
                "http via injector": timed_gets(upstream.url("/echo"), n, proxy=via),
                "https direct": timed_gets(tls_upstream.url("/echo"), n, verify=upstream_trust),
                "https via injector": timed_gets(
                    tls_upstream.url("/echo"), n, proxy=via, verify=mitm_trust
                ),
            }

        rows = await asyncio.to_thread(measure)
    medians = {name: statistics.median(times) * 1000 for name, times in rows.items()}
    with capsys.disabled():
        print()
        for name, ms in medians.items():
            p90 = statistics.quantiles(rows[name], n=10)[-1] * 1000
            print(f"  {name:<20} median {ms:6.2f} ms   p90 {p90:6.2f} ms   (n={n})")
        for scheme in ("http", "https"):
            added = medians[f"{scheme} via injector"] - medians[f"{scheme} direct"]
            print(f"  added by the injector on keep-alive ({scheme}): {added:+.2f} ms median")


@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_a_secret_is_not_sent_when_host_header_or_server_name_names_another_host(
    egress: EgressInjector,
    platform: Platform,
    upstream: Upstream,
    tls_upstream: Upstream,
    scheme: str,
) -> None:
    # On a shared CDN edge the Host header and TLS server name pick the site, not the
    # address: a mismatch could deliver the secret to another tenant (domain fronting).
    platform.put("api", VALUE, SecretRule(host_pattern="127.0.0.1"))
    platform.block("blocked.example")
    _, key = platform.run()
    server = tls_upstream if scheme == "https" else upstream
    seen = len(server.seen)
    async with client(egress, key) as c:
        response = await c.get(server.url("/echo"), headers={"Host": "evil.example"})
        assert response.status_code == 421 and "names another host" in response.text
        # Host policy applies to the names a request gives, not just its destination.
        response = await c.get(server.url("/echo"), headers={"Host": "blocked.example"})
        assert response.status_code == 403 and "blocked.example is blocked" in response.text
        if scheme == "https":
            assert await fronted_get(egress, key, server.port, sni="127.0.0.1") == 200
            assert await fronted_get(egress, key, server.port, sni="evil.example") == 421
    assert len(server.seen) == seen + (scheme == "https")


async def test_internal_addresses_are_unreachable_except_those_named(
    platform: Platform,
    tmp_path: Path,
    upstream: Upstream,
    tls_upstream: Upstream,
    tls_material: tuple[Path, Path, Path],
) -> None:
    _, key = platform.run()
    injector = platform.injector(
        tmp_path / "mitm",
        upstream_ca=tls_material[0],
        allow_internal=False,
        internal_allow=[("127.0.0.1", tls_upstream.port)],  # e.g. the model endpoint
    )
    seen = len(upstream.seen)
    async with running(injector) as egress, client(egress, key) as c:
        assert (await c.get(tls_upstream.url("/echo"))).status_code == 200
        for host in ("127.0.0.1", "localhost"):
            refused = await c.get(upstream.url("/echo", host=host))
            assert refused.status_code == 502 and "is internal" in refused.text
        with pytest.raises(httpx.ProxyError, match="502"):
            await c.get("https://169.254.169.254/latest/meta-data/")
        # A name that is not obviously internal but resolves there: dropped once connected.
        name = socket.gethostname()
        if is_internal(socket.gethostbyname(name)):
            with pytest.raises(httpx.TransportError):
                await c.get(upstream.url("/echo", host=name))
    assert len(upstream.seen) == seen
