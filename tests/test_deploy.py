"""The deploy files, checked as far as a machine without a container runtime can: they parse, the
image starts a command the package really installs and probes routes the app really serves, the
Kubernetes manifests validate against the Kubernetes schemas, and the Collector config forwards
to trajhub through persistent, retrying queues under the current component names."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import httpx
import kubernetes_validate
import pytest
import yaml

from tests.harness import ServerProcess

ROOT = Path(__file__).parent.parent
DEPLOY = ROOT / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
MANIFESTS = sorted(KUBERNETES.glob("*.yaml"))
KUBERNETES_VERSION = "1.30"


def _yaml_documents(path: Path) -> list[Any]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def _dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n\s*", " ", (DEPLOY / "Dockerfile").read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _instruction(name: str) -> str:
    found = [rest for word, rest in _dockerfile_instructions() if word == name]
    assert found, f"the Dockerfile has no {name}"
    return found[-1]


COLLECTOR_CONFIGS = [DEPLOY / "otel-collector.yaml", DEPLOY / "otel-collector-replicas.yaml"]


@pytest.mark.parametrize("path", [*MANIFESTS, DEPLOY / "compose.yaml", *COLLECTOR_CONFIGS],
                         ids=lambda p: p.name)
def test_yaml_files_parse(path: Path) -> None:
    assert _yaml_documents(path), f"{path} is empty"


@pytest.mark.parametrize("path", [p for p in MANIFESTS if p.name != "kustomization.yaml"],
                         ids=lambda p: p.name)
def test_kubernetes_manifests_validate(path: Path) -> None:
    for doc in _yaml_documents(path):
        # raises ValidationError naming the field on an invalid resource
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_kubernetes_validation_rejects_a_broken_manifest() -> None:
    """The check above is a real check: a misspelled field fails it."""
    doc = _yaml_documents(KUBERNETES / "deployment.yaml")[0]
    doc["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_kustomization_lists_existing_manifests() -> None:
    kustomization = _yaml_documents(KUBERNETES / "kustomization.yaml")[0]
    for resource in kustomization["resources"]:
        assert (KUBERNETES / resource).is_file(), resource


def test_image_start_command_is_an_installed_console_script() -> None:
    argv = json_or_shell(_instruction("CMD"))
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert argv[0] in scripts, f"CMD runs {argv[0]!r}, which the package does not install"
    assert argv[1] == "serve"
    deployment = _yaml_documents(KUBERNETES / "deployment.yaml")[0]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == [argv[0]] and container["args"][0] == "serve"


def json_or_shell(arguments: str) -> list[str]:
    if arguments.startswith("["):
        return list(yaml.safe_load(arguments))
    return shlex.split(arguments)


def test_image_copies_every_source_folder_of_the_package() -> None:
    """`pip install .` in the image needs every folder pyproject.toml maps into the package."""
    package_dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"]
    copied = {shlex.split(rest)[0].rstrip("/") for word, rest in _dockerfile_instructions()
              if word == "COPY"}
    assert set(package_dirs.values()) <= copied
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert not ignored & copied, "the .dockerignore drops a folder the image copies"
    assert ".git" in ignored and ".venv" in ignored and "deploy/trajhub.env" in ignored


def _probe_paths() -> dict[str, str]:
    healthcheck = _instruction("HEALTHCHECK")
    compose = _yaml_documents(DEPLOY / "compose.yaml")[0]
    deployment = _yaml_documents(KUBERNETES / "deployment.yaml")[0]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    url = re.compile(r"http://127\.0\.0\.1:4318(/[a-z]+)")
    return {
        "Dockerfile HEALTHCHECK": url.search(healthcheck).group(1),  # type: ignore[union-attr]
        "compose healthcheck": url.search(  # type: ignore[union-attr]
            " ".join(compose["services"]["trajhub"]["healthcheck"]["test"])).group(1),
        "readinessProbe": container["readinessProbe"]["httpGet"]["path"],
        "livenessProbe": container["livenessProbe"]["httpGet"]["path"],
    }


def test_health_checks_hit_routes_the_server_answers(server: ServerProcess) -> None:
    for where, path in _probe_paths().items():
        response = httpx.get(server.http + path)
        assert response.status_code == 200, f"{where} probes {path}: {response.status_code}"


def test_deploy_files_run_with_auth_on_and_a_bootstrap_key_from_a_secret() -> None:
    compose = _yaml_documents(DEPLOY / "compose.yaml")[0]
    trajhub = compose["services"]["trajhub"]
    assert trajhub["environment"]["TRAJHUB_AUTH"] == "on"
    env_file = DEPLOY / trajhub["env_file"][0]["path"]
    example = env_file.with_name(env_file.name + ".example").read_text()
    assert re.search(r"^TRAJHUB_BOOTSTRAP_KEY=", example, re.M)
    assert "TRAJHUB_BOOTSTRAP_KEY" not in trajhub["environment"], "a key inline in compose.yaml"

    deployment = _yaml_documents(KUBERNETES / "deployment.yaml")[0]
    env = {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["TRAJHUB_AUTH"]["value"] == "on"
    ref = env["TRAJHUB_BOOTSTRAP_KEY"]["valueFrom"]["secretKeyRef"]
    secrets = {d["metadata"]["name"]: d
               for d in _yaml_documents(KUBERNETES / "secret.example.yaml")}
    assert ref["key"] in secrets[ref["name"]]["stringData"]


def test_compose_scales_trajhub_behind_a_collector_without_host_port_clashes() -> None:
    services = _yaml_documents(DEPLOY / "compose.yaml")[0]["services"]
    trajhub = services["trajhub"]
    assert trajhub["deploy"]["replicas"] > 1
    for port in trajhub.get("ports", []):
        # "host_ip::container" or "container" alone: compose picks a free host port per replica
        parts = str(port).split(":")
        assert len(parts) == 1 or parts[-2] == "", f"fixed host port {port} clashes when scaled"
    collector = services["otel-collector"]
    assert "4317:4317" in collector["ports"]
    mounted = {v.split(":")[0]: v.split(":")[1] for v in collector["volumes"]}
    assert collector["environment"]["TRAJHUB_REPLICAS_DNS"] == "trajhub"
    config = _yaml_documents(DEPLOY / "otel-collector.yaml")[0]
    queue_dir = config["extensions"]["file_storage/queue"]["directory"]
    assert queue_dir in mounted.values(), "the persistent queue is not on a volume"


# Renamed in the Collector: otlp -> otlp_grpc, otlphttp -> otlp_http,
# loadbalancing -> load_balancing
DEPRECATED_EXPORTERS = {"otlp", "otlphttp", "loadbalancing"}


def test_collector_uses_current_component_names() -> None:
    config = _yaml_documents(DEPLOY / "otel-collector.yaml")[0]
    kinds = {name.split("/")[0] for name in config["exporters"]}
    assert not kinds & DEPRECATED_EXPORTERS
    assert {"otlp_grpc", "otlp_http", "load_balancing"} <= kinds
    for pipeline in config["service"]["pipelines"].values():
        for exporter in pipeline["exporters"]:
            assert exporter in config["exporters"]


@pytest.mark.parametrize("path", COLLECTOR_CONFIGS, ids=lambda p: p.name)
def test_every_exporter_to_trajhub_keeps_a_persistent_retrying_queue(path: Path) -> None:
    config = _yaml_documents(path)[0]
    storages = set(config["service"]["extensions"])
    for name, exporter in config["exporters"].items():
        queue = exporter["sending_queue"]
        assert queue["enabled"] is True, name
        assert queue["storage"] in storages and queue["storage"].startswith("file_storage"), name
        # the OTLP exporters retry 503 / UNAVAILABLE (trajhub's overload and database-blip
        # answers) when retry_on_failure is on
        assert exporter["retry_on_failure"]["enabled"] is True, name
        headers = (exporter.get("protocol", {}).get("otlp", exporter)).get("headers", {})
        assert headers.get("authorization", "").startswith("Bearer ${env:"), name
        # batched after the persistent queue: a span is on disk before it is acknowledged
        assert queue["batch"]["sizer"] == "items", name
    for pipeline in config["service"]["pipelines"].values():
        assert not [p for p in pipeline.get("processors", []) if p.split("/")[0] == "batch"]


def test_replicas_collector_routes_by_trace_id_to_a_static_list() -> None:
    config = _yaml_documents(DEPLOY / "otel-collector-replicas.yaml")[0]
    (pipeline,) = config["service"]["pipelines"].values()
    (name,) = pipeline["exporters"]
    exporter = config["exporters"][name]
    assert name.split("/")[0] == "load_balancing"
    assert exporter["routing_key"] == "traceID"
    hostnames = exporter["resolver"]["static"]["hostnames"]
    assert len(hostnames) >= 2 and all(h.rsplit(":", 1)[1].isdigit() for h in hostnames)
