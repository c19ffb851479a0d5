"""deploy/compose.yaml checked by docker compose itself (`docker-compose config`: Debian's docker-compose validates
and resolves the file without an engine), and its HAProxy configuration by `haproxy -c`.

Skipped when docker-compose is missing, failed instead when GATEWAY_REQUIRE_COMPOSE is set (.ci/run installs it).
Nothing is started: no container engine runs here (docs/deploy.md says what to check first).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import yaml

from tests.deploy.haproxy import haproxy_binary
from tests.deploy.processes import BASE_DIR
from tests.missing_tools import skip_or_fail

DEPLOY = BASE_DIR / "deploy"
REQUIRE = "GATEWAY_REQUIRE_COMPOSE"


def compose_binary() -> str:
    binary = shutil.which("docker-compose")
    if binary is None:
        skip_or_fail("docker-compose", "apt-get install docker-compose", REQUIRE)
    return binary


def compose_config(tmp_path: Path, **values: str) -> subprocess.CompletedProcess:
    """`docker-compose config` of deploy/compose.yaml with the example env file, `values` filled in."""
    (tmp_path / "deploy").mkdir()
    shutil.copy(DEPLOY / "compose.yaml", tmp_path / "deploy" / "compose.yaml")
    lines = (DEPLOY / "compose.env.example").read_text().splitlines()
    for name, value in values.items():
        lines = [f"{name}={value}" if line == f"{name}=" else line for line in lines]
    (tmp_path / "deploy" / "compose.env").write_text("\n".join(lines) + "\n")
    command = [compose_binary(), "-f", "deploy/compose.yaml", "--env-file", "deploy/compose.env", "config"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POSTGRES_", "GATEWAY_", "COMPOSE_"))}
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


def test_the_example_env_file_holds_no_secret_and_compose_refuses_it_unfilled(tmp_path):
    example = (DEPLOY / "compose.env.example").read_text()
    for name in ("POSTGRES_PASSWORD", "DJANGO_SECRET_KEY", "GATEWAY_BYOK_ENCRYPTION_KEYS"):
        assert f"\n{name}=\n" in example
    result = compose_config(tmp_path)
    assert result.returncode != 0 and "set POSTGRES_PASSWORD in deploy/compose.env" in result.stderr


def test_compose_file_resolves_with_its_services_order_and_drain(tmp_path):
    result = compose_config(tmp_path, POSTGRES_PASSWORD="pw", DJANGO_SECRET_KEY="k" * 50)
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    assert set(services) == {"postgres", "redis", "setup", "gateway", "balancer", "worker", "scheduler"}
    gateway = services["gateway"]
    assert gateway["deploy"]["replicas"] == 2
    assert gateway["depends_on"]["setup"]["condition"] == "service_completed_successfully"
    assert gateway["environment"]["DATABASE_URL"] == "postgres://gateway:pw@postgres:5432/gateway"
    assert gateway["environment"]["DJANGO_SECRET_KEY"] == "k" * 50  # from the env file
    # drain 10 + graceful 30 + accounting 10 s fit in the stop grace period
    assert gateway["stop_grace_period"] in ("60s", "1m") and gateway["command"] == ["serve"]
    assert services["setup"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["setup"]["restart"] == "no"
    assert services["worker"]["command"] == ["worker"] and services["scheduler"]["command"] == ["schedule"]
    assert services["balancer"]["ports"][0]["target"] == 8080


def test_the_balancer_configurations_are_valid_haproxy():
    binary = haproxy_binary()
    for config in ("haproxy.cfg", "compose.cfg"):
        check = subprocess.run(
            [binary, "-c", "-f", str(DEPLOY / "haproxy" / config)],
            env={**os.environ, "HAPROXY_STATS_SOCKET": "/tmp/gateway-test.sock"},
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert check.returncode == 0, (config, check.stdout, check.stderr)
