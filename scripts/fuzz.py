"""`make fuzz`: schemathesis against the gateway's own OpenAPI schema, served by a running gateway.

    .venv/bin/python -m scripts.fuzz [--max-examples N] [--phases examples,coverage,fuzzing] [--url URL ...]

Without `--url` it starts a throwaway gateway (uvicorn, a fresh SQLite database in a temporary directory,
`bootstrap` for the organization, the catalog and one management and one inference key) and stops it after.
Every management operation is fuzzed with the management key; POST /api/v1/responses with the inference
key (JSON bodies). Checks: no 5xx (`not_a_server_error`), statuses, content types and bodies conforming to
the schema, and every error in the envelope (`scripts/fuzz_checks.py`). Exit status 0 when all pass.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = "/api/v1/openapi.json"
RESPONSES_PATH = "/api/v1/responses"
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
    ("inference", ["--include-path", RESPONSES_PATH]),
    ("management", ["--exclude-path", RESPONSES_PATH, "--exclude-path", OWN_KEY_PATH]),
    ("management", ["--include-path", OWN_KEY_PATH]),
)


def schemathesis_command(
    base_url: str, key: str, selection: list[str], *, max_examples: int, phases: str, seed: int | None = None
) -> list[str]:
    """The `schemathesis run` command line for the operations `selection` picks."""
    bin_dir = Path(sys.executable).parent
    command = [
        str(bin_dir / "schemathesis"),
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
    """The three runs; returns (exit status, combined output)."""
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "scripts.fuzz_checks", "PYTHONPATH": str(ROOT)}
    keys = {"management": management_key, "inference": inference_key}
    status, outputs = 0, []
    for kind, selection in RUNS:
        command = schemathesis_command(base_url, keys[kind], selection, **options)
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
    uvicorn = Path(python).parent / "uvicorn"
    server = subprocess.Popen(
        [
            *(str(uvicorn), "gateway_project.asgi:application", "--host", "127.0.0.1", "--port", str(port)),
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
        print(output)
        return status
    with tempfile.TemporaryDirectory(prefix="gateway-fuzz-") as directory:
        server, base_url, keys = start_gateway(directory)
        try:
            status, output = run_schemathesis(base_url, keys["management_key"], keys["inference_key"], **options)
        finally:
            server.terminate()
            server.wait(timeout=20)
    print(output)
    return status


if __name__ == "__main__":
    sys.exit(main())
