"""The deployment a team applies (deploy/), checked offline.

The Kubernetes manifests are validated against the API's own schemas (strict:
an unknown field is an error) with ``kubernetes-validate``; the compose file and
the manifests are checked for what makes them a Benchwright deployment: every
service, more than one copy of each, probes, the cluster's NATS servers and
replicas, provider keys in the proxy alone, and only settings that exist.
"""

import re
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from benchwright_runtime.host import SERVICES
from benchwright_shared.settings import Settings

ROOT = Path(__file__).parents[2]
DEPLOY = ROOT / "deploy"
KUBE = DEPLOY / "kubernetes"
MANIFESTS = sorted(p for p in KUBE.glob("*.yaml") if p.name != "kustomization.yaml")
KUBE_VERSIONS = ["1.30.0", kubernetes_validate.latest_version()]
SETTINGS = {f"BW_{name.upper()}" for name in Settings.model_fields}


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def every_resource() -> list[dict[str, Any]]:
    return [d for path in MANIFESTS for d in documents(path)]


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [d for d in every_resource() if d["kind"] == kind]


@pytest.mark.parametrize("version", KUBE_VERSIONS)
@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_every_manifest_is_valid_for_the_kubernetes_api(path: Path, version: str) -> None:
    for document in documents(path):
        kubernetes_validate.validate(document, version, strict=True)


def test_kustomization_applies_every_manifest_but_the_secrets_example() -> None:
    listed = set(documents(KUBE / "kustomization.yaml")[0]["resources"])
    assert listed == {p.name for p in MANIFESTS} - {"secrets.example.yaml"}


def test_every_service_is_a_deployment_with_copies_probes_and_its_own_command() -> None:
    deployments = {d["metadata"]["name"]: d for d in of_kind("Deployment")}
    assert set(deployments) == set(SERVICES)
    images = set()
    for name, deployment in deployments.items():
        assert deployment["spec"]["replicas"] >= 2, name
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert container["args"] == ["serve", name]
        images.add(container["image"])
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz", name
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz", name
        refs = {next(iter(source.values()))["name"] for source in container.get("envFrom", [])}
        assert {"benchwright-config", "benchwright-secrets"} <= refs, name
        # Only the proxy holds provider keys; only the orchestrator the Driver's key.
        assert ("benchwright-provider-keys" in refs) == (name == "proxy"), name
        assert ("benchwright-driver-key" in refs) == (name == "orchestrator"), name
        assert {"requests", "limits"} <= set(container["resources"]), name
    assert len(images) == 1  # one image, one command per service
    budgets = {d["metadata"]["name"] for d in of_kind("PodDisruptionBudget")}
    assert set(SERVICES) <= budgets


def test_the_configuration_names_real_settings_and_the_whole_nats_cluster() -> None:
    (config,) = [d for d in of_kind("ConfigMap") if d["metadata"]["name"] == "benchwright-config"]
    data: dict[str, str] = config["data"]
    assert set(data) - {"BW_LOG_LEVEL"} <= SETTINGS, set(data) - SETTINGS
    (nats,) = of_kind("StatefulSet")
    servers = data["BW_NATS_URL"].split(",")
    assert len(servers) == nats["spec"]["replicas"] == int(data["BW_NATS_REPLICAS"]) == 3
    for secret in of_kind("Secret"):
        extra = {"mitmproxy-ca.pem", "mitmproxy-ca-cert.pem"}
        assert set(secret.get("stringData", {})) - extra <= SETTINGS, secret["metadata"]["name"]
    for deployment in of_kind("Deployment"):
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert {e["name"] for e in container.get("env", [])} <= SETTINGS


def test_sandboxes_reach_the_proxy_through_its_service_and_the_injector_ca_is_shared() -> None:
    (config,) = [d for d in of_kind("ConfigMap") if d["metadata"]["name"] == "benchwright-config"]
    services = {d["metadata"]["name"]: d for d in of_kind("Service")}
    ports = {p["port"] for p in services["proxy"]["spec"]["ports"]}
    for key in ("BW_PROXY_PUBLIC_URL", "BW_INJECTOR_PUBLIC_URL"):
        url = config["data"][key]
        assert url.startswith("http://proxy.benchwright.svc:")
        assert int(url.rsplit(":", 1)[1]) in ports
    (proxy,) = [d for d in of_kind("Deployment") if d["metadata"]["name"] == "proxy"]
    volumes = {v["name"]: v for v in proxy["spec"]["template"]["spec"]["volumes"]}
    assert volumes["injector-ca"]["secret"]["secretName"] == "benchwright-injector-ca"


def test_the_compose_file_runs_a_nats_cluster_postgres_and_copies_of_every_service() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services: dict[str, Any] = compose["services"]
    nats = [n for n in services if n.startswith("nats-")]
    assert len(nats) == 3
    for name in nats:
        command = " ".join(services[name]["command"])
        assert "-js" in command and "--routes" in command and "--cluster_name bw" in command
    assert "healthcheck" in services["postgres"]
    for name in SERVICES:
        service = services[name]
        assert service["command"] == ["serve", name]
        assert service["deploy"]["replicas"] >= 2, name
        env = service["environment"]
        assert len(env["BW_NATS_URL"].split(",")) == 3 and env["BW_NATS_REPLICAS"] == "3"
        assert set(env) <= SETTINGS, set(env) - SETTINGS
        assert "readyz" in " ".join(service["healthcheck"]["test"])
    assert services["lb"]["ports"] == ["8765:8765"]
    example = (DEPLOY / "benchwright.env.example").read_text()
    names = set(re.findall(r"^(BW_[A-Z0-9_]+)=", example, re.M))
    assert names <= SETTINGS and "BW_VAULT_KEY" in names


def test_the_image_runs_the_benchwright_command() -> None:
    text = (DEPLOY / "Containerfile").read_text()
    assert 'ENTRYPOINT ["benchwright"]' in text and "bubblewrap" in text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = set(project["optional-dependencies"])
    installed = re.search(r'pip install --no-cache-dir "\.\[([a-z,-]+)\]"', text)
    assert installed, "the image installs Benchwright with its extras"
    # All but the compiled offline model and the dev tools: a run that works here works
    # in the image (the Inspect bridge, Harbor's agents).
    assert set(installed.group(1).split(",")) == extras - {"dev", "local-model"}
    assert "tmux" in text  # Harbor's terminus-2 needs it in the task sandbox
