"""Where a command's URLs lead inside an isolated sandbox (no I/O)."""

from benchwright_sandbox_manager.backends.forwarding import (
    SPARE_PORTS_FROM,
    Forward,
    Target,
    plan_network,
)


def test_the_model_proxy_keeps_its_loopback_url_and_gets_a_forwarder() -> None:
    plan = plan_network({"BW_MODEL_PROXY_URL": "http://127.0.0.1:8766", "X": "1"}, None)
    assert plan.env == {"BW_MODEL_PROXY_URL": "http://127.0.0.1:8766", "X": "1"}
    assert plan.forwards == [Forward(Target("127.0.0.1", 8766), 8766)]
    assert plan.names == set()


def test_host_names_resolve_to_the_forwarder_and_addresses_are_rewritten() -> None:
    plan = plan_network(
        {
            "BW_MODEL_PROXY_URL": "https://proxy.internal/v1",
            "HTTPS_PROXY": "http://run:secret@10.0.0.5:8080",
        },
        None,
    )
    # A privileged port moves; the host name stays (it resolves to 127.0.0.1 inside).
    assert plan.env["BW_MODEL_PROXY_URL"] == f"https://proxy.internal:{SPARE_PORTS_FROM}/v1"
    # Credentials in the proxy URL are kept: the injector tells runs apart by them.
    assert plan.env["HTTPS_PROXY"] == "http://run:secret@127.0.0.1:8080"
    assert plan.names == {"proxy.internal"}
    assert set(plan.forwards) == {
        Forward(Target("proxy.internal", 443), SPARE_PORTS_FROM),
        Forward(Target("10.0.0.5", 8080), 8080),
    }
    # Calls to the model proxy do not go through the egress proxy.
    assert plan.env["NO_PROXY"] == plan.env["no_proxy"] == "localhost,127.0.0.1,proxy.internal"


def test_the_configured_egress_proxy_is_set_for_every_client() -> None:
    plan = plan_network({"NO_PROXY": "example.org"}, "http://127.0.0.1:3128")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        assert plan.env[var] == "http://127.0.0.1:3128"
    assert plan.env["NO_PROXY"] == "example.org,localhost,127.0.0.1"
    assert plan.forwards == [Forward(Target("127.0.0.1", 3128), 3128)]


def test_two_targets_on_one_port_get_two_inside_ports() -> None:
    plan = plan_network(
        {"BW_MODEL_PROXY_URL": "http://10.0.0.1:9000", "HTTP_PROXY": "http://10.0.0.2:9000"},
        None,
    )
    assert plan.env["BW_MODEL_PROXY_URL"] == "http://127.0.0.1:9000"
    assert plan.env["HTTP_PROXY"] == f"http://127.0.0.1:{SPARE_PORTS_FROM}"
    assert len(plan.forwards) == 2


def test_values_that_are_not_http_urls_lead_nowhere() -> None:
    plan = plan_network({"BW_MODEL_PROXY_URL": "unix:///run/x.sock", "HTTP_PROXY": ""}, None)
    assert plan.env == {"BW_MODEL_PROXY_URL": "unix:///run/x.sock", "HTTP_PROXY": ""}
    assert plan.forwards == []
