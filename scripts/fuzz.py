"""`make fuzz`: schemathesis against the gateway's own OpenAPI schema, served by a running gateway.

    .venv/bin/python -m scripts.fuzz [--max-examples N] [--phases examples,coverage,fuzzing] [--url URL ...]

Without `--url` it starts a throwaway gateway (uvicorn, a fresh SQLite database in a temporary directory,
`bootstrap` for the organization, the catalog and one management and one inference key) and stops it after.
Every management operation is fuzzed with the management key; POST /api/v1/responses, /chat/completions
and /messages with the inference key (JSON bodies). Checks: no 5xx (`not_a_server_error`), statuses, content
types and bodies conforming to the schema, and every error in the envelope (`scripts/fuzz_checks.py`). Then
the hostile-input pass (`scripts/fuzz_hostile.py`): bodies nested past the limits and NUL characters in
bodies, paths and queries of every operation, no 5xx. Exit status 0 when all pass.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from scripts.fuzz_hostile import run_hostile

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = "/api/v1/openapi.json"
RESPONSES_PATH = "/api/v1/responses"
EMBEDDINGS_PATH = "/api/v1/embeddings"
INFERENCE_PATHS = (RESPONSES_PATH, "/api/v1/chat/completions", "/api/v1/messages", EMBEDDINGS_PATH)
CHECKS = ",".join(
    (
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
        "error_envelope",
    )
)


# The operations that can delete or disable the fuzzer's own key run last (schemathesis reuses identifiers
# it saw in earlier responses, so DELETE /keys/{hash} does reach the bootstrap keys).
OWN_KEY_PATH = "/api/v1/keys/{hash}"
RUNS = (
    ("inference", [arg for path in INFERENCE_PATHS for arg in ("--include-path", path)]),
    (
        "management",
        [*(arg for path in INFERENCE_PATHS for arg in ("--exclude-path", path)), "--exclude-path", OWN_KEY_PATH],
    ),
    ("management", ["--include-path", OWN_KEY_PATH]),
)


def _call(base_url: str, key: str, method: str, path: str, body: dict, content_type: str = "application/json"):
    request = urllib.request.Request(
        base_url + path,
        data=json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {key}", "Content-Type": content_type},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


ID_PREFIXES = {  # which resource the `{id}` of a path names
    "/api/v1/workspaces/{id}": "workspace",
    "/api/v1/guardrails/{id}": "guardrail",
    "/api/v1/byok/{id}": "byok",
    "/api/v1/observability/destinations/{id}": "destination",
    "/api/v1/scim/group-mappings/{id}": "group_mapping",
    "/api/v1/scim/groups/{id}": "scim_group",
}


def _create_resources(base_url: str, key: str, tag: str) -> tuple[dict[str, str], list[str]]:
    """One resource of each type named `fuzz-<tag>`; returns their identifiers and notes on failures."""
    name = f"fuzz-{tag}"
    webhook = {"name": name, "type": "webhook", "config": {"url": "https://8.8.8.8/hook"}}
    scim_group = {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": name}
    steps = [  # (resource, path, body, content type, field of the answer that is its identifier)
        ("workspace", "/api/v1/workspaces", {"name": name}, "application/json", "id"),
        ("guardrail", "/api/v1/guardrails", {"name": name}, "application/json", "id"),
        ("byok", "/api/v1/byok", {"provider": "openai", "key": "sk-fuzz-0123456789"}, "application/json", "id"),
        ("destination", "/api/v1/observability/destinations", webhook, "application/json", "id"),
        ("preset", f"/api/v1/presets/{name}/responses", {"model": "echo/echo-1"}, "application/json", "slug"),
        ("scim_group", "/api/v1/scim/v2/Groups", scim_group, "application/scim+json", "id"),
        ("key", "/api/v1/keys", {"name": name}, "application/json", "hash"),
    ]
    ids: dict[str, str] = {}
    notes: list[str] = []
    for kind, path, body, content_type, field in steps:
        try:
            answer = _call(base_url, key, "POST", path, body, content_type)
            ids[kind] = (answer.get("data") or answer)[field]
        except (OSError, KeyError, ValueError) as exc:
            notes.append(f"fuzz: no {kind} to aim at ({exc})")
    if "scim_group" in ids and "workspace" in ids:
        mapping = {"scim_group_id": ids["scim_group"], "workspace_id": ids["workspace"], "role": "member"}
        try:
            ids["group_mapping"] = _call(base_url, key, "POST", "/api/v1/scim/group-mappings", mapping)["data"]["id"]
        except (OSError, KeyError, ValueError) as exc:
            notes.append(f"fuzz: no group_mapping to aim at ({exc})")
    return ids, notes


def _path_values(path: str, ids: dict[str, str]) -> dict[str, str] | None:
    values = {"version": "1", "interval": "daily"}
    if "{hash}" in path:
        values["hash"] = ids.get("key", "")
    if "{slug}" in path:
        values["slug"] = ids.get("preset", "")
    if "{id}" in path:
        kind = next((k for prefix, k in ID_PREFIXES.items() if path == prefix or path.startswith(prefix + "/")), "")
        values["id"] = ids.get(kind, "")
    wanted = {name: values.get(name, "") for name in re.findall(r"{(\w+)}", path)}
    return wanted if all(wanted.values()) else None


def seed_resources(base_url: str, key: str) -> tuple[list[tuple[str, str, dict[str, str]]], list[str]]:
    """Real resources for the operations on `{id}` paths, so they reach their logic and not only 404.

    Two of each type: DELETE operations are aimed at the second one (it is gone after the first case),
    every other operation at the first. Returns (path, method filter, parameter values) entries for the
    schemathesis configuration, and notes on resources that could not be created (those are left out).
    """
    keep, notes = _create_resources(base_url, key, "keep")
    gone, more = _create_resources(base_url, key, "delete")
    with urllib.request.urlopen(base_url + SCHEMA_PATH, timeout=30) as response:
        paths = [path for path in json.load(response)["paths"] if "{" in path]
    pinned = []
    for path in paths:
        for method_filter, ids in (('exclude-method = "DELETE"', keep), ('include-method = "DELETE"', gone)):
            values = _path_values(path, ids)
            if values:
                pinned.append((path, method_filter, values))
    return pinned, notes + more


def write_config(pinned: list[tuple[str, str, dict[str, str]]], directory: str) -> str:
    """A schemathesis.toml that fixes the path parameters of the `pinned` operations."""
    lines = []
    for path, method_filter, values in pinned:
        params = ", ".join(f'"path.{name}" = {json.dumps(value)}' for name, value in values.items())
        lines += ["[[operations]]", f"include-path = {json.dumps(path)}", method_filter]
        lines += [f"parameters = {{ {params} }}", ""]
    config = Path(directory) / "schemathesis.toml"
    config.write_text("\n".join(lines))
    return str(config)


def schemathesis_command(
    base_url: str,
    key: str,
    selection: list[str],
    *,
    max_examples: int,
    phases: str,
    seed: int | None = None,
    config: str | None = None,
) -> list[str]:
    """The `schemathesis run` command line for the operations `selection` picks."""
    bin_dir = Path(sys.executable).parent
    command = [
        str(bin_dir / "schemathesis"),
        *(["--config-file", config] if config else []),
        "run",
        base_url + SCHEMA_PATH,
        "--url",
        base_url,
        "--header",
        f"Authorization: Bearer {key}",
        "--checks",
        CHECKS,
        "--phases",
        phases,
        "--max-examples",
        str(max_examples),
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--suppress-health-check",
        "all",
        "--no-color",
        "--continue-on-failure",
        *selection,
    ]
    if seed is not None:
        command += ["--seed", str(seed)]
    return command


def run_schemathesis(base_url: str, management_key: str, inference_key: str, **options) -> tuple[int, str]:
    """Seeds one resource of each type, then the three runs; returns (exit status, combined output)."""
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "scripts.fuzz_checks", "PYTHONPATH": str(ROOT)}
    keys = {"management": management_key, "inference": inference_key}
    status, outputs = 0, []
    with tempfile.TemporaryDirectory(prefix="gateway-fuzz-config-") as directory:
        pinned, notes = seed_resources(base_url, management_key)
        outputs.extend(notes)
        config = write_config(pinned, directory)
        for kind, selection in RUNS:
            command = schemathesis_command(base_url, keys[kind], selection, config=config, **options)
            done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
            outputs.append(done.stdout + done.stderr)
            status = status or done.returncode
    return status, "\n".join(outputs)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _server_env(directory: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL",)}
    env.update(
        DATABASE_URL=f"sqlite:///{directory}/fuzz.sqlite3",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(48),
        GATEWAY_BYOK_ENCRYPTION_KEYS=base64.urlsafe_b64encode(os.urandom(32)).decode(),
        GATEWAY_LOG_LEVEL="ERROR",
        GATEWAY_DRAIN_SECONDS="0",  # no balancer in front: SIGTERM stops at once
    )
    return env


def start_gateway(directory: str) -> tuple[subprocess.Popen, str, dict]:
    """Migrate and bootstrap a fresh database, serve it with uvicorn; (process, base URL, bootstrap keys)."""
    env = _server_env(directory)
    python = sys.executable
    subprocess.run([python, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    boot = subprocess.run(
        [python, "manage.py", "bootstrap", "--json"], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    keys = json.loads(boot.stdout.strip().splitlines()[-1])
    port = _free_port()
    server = subprocess.Popen(
        [  # served as `make run` serves it (the gateway's HTTP protocol: head and read limits)
            *(python, "-m", "gateway_project.serve", "gateway_project.asgi:application"),
            *("--host", "127.0.0.1", "--port", str(port)),
            *("--no-server-header", "--lifespan", "off", "--log-level", "warning"),
        ],
        cwd=ROOT,
        env=env,
    )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(base_url + SCHEMA_PATH, timeout=2).read()
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.terminate()
                raise RuntimeError("the gateway did not start") from None
            time.sleep(0.2)
    return server, base_url, keys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=int(os.environ.get("FUZZ_MAX_EXAMPLES", "50")))
    parser.add_argument("--phases", default=os.environ.get("FUZZ_PHASES", "examples,coverage,fuzzing"))
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--url", help="fuzz an already running gateway at this base URL (needs both keys)")
    parser.add_argument("--management-key", default=os.environ.get("FUZZ_MANAGEMENT_KEY"))
    parser.add_argument("--inference-key", default=os.environ.get("FUZZ_INFERENCE_KEY"))
    args = parser.parse_args(argv)
    options = {"max_examples": args.max_examples, "phases": args.phases, "seed": args.seed}
    if args.url:
        if not (args.management_key and args.inference_key):
            parser.error("--url needs --management-key and --inference-key")
        status, output = run_schemathesis(args.url, args.management_key, args.inference_key, **options)
        hostile_status, hostile_output = run_hostile(args.url, args.management_key, args.inference_key)
        print(output)
        print(hostile_output)
        return status or hostile_status
    with tempfile.TemporaryDirectory(prefix="gateway-fuzz-") as directory:
        server, base_url, keys = start_gateway(directory)
        try:
            status, output = run_schemathesis(base_url, keys["management_key"], keys["inference_key"], **options)
            hostile_status, hostile_output = run_hostile(base_url, keys["management_key"], keys["inference_key"])
        finally:
            server.terminate()
            server.wait(timeout=20)
    print(output)
    print(hostile_output)
    return status or hostile_status


if __name__ == "__main__":
    sys.exit(main())
