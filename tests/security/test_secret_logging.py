"""Secrets never reach the logs: every log record (DEBUG and up, tracebacks included) emitted while keys,
BYOK credentials and destinations with secrets are created and rotated, inference runs through the real
gateway (success, stream, upstream failure, an upstream 401 that quotes the key) and traces are
delivered, is searched for every raw secret value."""

from __future__ import annotations

import logging

import httpx
import pytest

from tests.fakes.fake_receiver import FakeReceiver
from tests.inference.conftest import add_endpoint, wait_idle

pytestmark = pytest.mark.slow

BYOK_KEY = "sk-byok-first-Tq8Lm2Wx7Pz4Rv9Kd3Ns"
BYOK_ROTATED = "sk-byok-second-Hy6Jc1Qe5Ub8Zo2Gf7Ai"
WEBHOOK_SECRET = "whsec-Vn3Kp9Lx2Qm7Rt5Wy8Bz"
HEADER_SECRET = "hdr-secret-Ej4Mf8Nc1Pk6Sg9Ud2Xa"
LANGFUSE_SECRET = "sk-lf-Oh5Ri3Tj7Vl1Wn9Yq4Cs"
PLATFORM_KEY = "sk-platform-Gb2Dh6Fk8Jm3Lp5Nr9Qt"


class Capture(logging.Handler):
    """Every record, formatted with its traceback and stack, as a log file would hold it."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record) + " " + repr(getattr(record, "args", None)))


@pytest.fixture
def receiver():
    fake = FakeReceiver().start()
    yield fake
    fake.stop()


@pytest.fixture
def captured():
    handler = Capture()
    root = logging.getLogger()
    loggers = [root] + [
        logger
        for logger in logging.root.manager.loggerDict.values()
        if isinstance(logger, logging.Logger) and not logger.propagate
    ]
    levels = [(lg, lg.level) for lg in logging.root.manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    for logger in loggers:
        logger.addHandler(handler)
    root_level = root.level
    root.setLevel(logging.DEBUG)
    for logger, _ in levels:
        logger.setLevel(logging.DEBUG)
    yield handler
    for logger in loggers:
        logger.removeHandler(handler)
    root.setLevel(root_level)
    for logger, level in levels:
        logger.setLevel(level)


def test_no_secret_in_any_log_record(
    gateway_server, transactional_db, org, fake_upstream, receiver, captured, monkeypatch
):
    from inference.routing import clear_caches
    from tests.observability.test_worker import make_worker

    monkeypatch.setenv("FAKEAI_API_KEY", PLATFORM_KEY)
    for model in ("fakeai/good", "fakeai/fail-500", "fakeai/fail-400"):
        add_endpoint(
            model, "fakeai", api_format="openai-chat", base_url=fake_upstream.base_url, api_key_env="FAKEAI_API_KEY"
        )
    clear_caches()
    api = org.client()

    created_key = api.post("/api/v1/keys", {"name": "second"}, format="json").json()["key"]
    api.patch(f"/api/v1/keys/{org.inference_hash}", {"name": "renamed"}, format="json")
    api.post("/api/v1/keys", {"name": "x" * 1000}, format="json")  # a validation error path
    credential = api.post("/api/v1/byok", {"provider": "fakeai", "key": BYOK_KEY}, format="json")
    assert credential.status_code == 201, credential.content
    destination = {
        "name": "hook",
        "type": "webhook",
        "config": {"url": f"{receiver.url}/hook", "secret": WEBHOOK_SECRET, "headers": {"X-Api-Key": HEADER_SECRET}},
    }
    assert api.post("/api/v1/observability/destinations", destination, format="json").status_code == 201
    langfuse = {"name": "lf", "type": "langfuse", "config": {"publicKey": "pk-lf-1", "secretKey": LANGFUSE_SECRET}}
    assert api.post("/api/v1/observability/destinations", langfuse, format="json").status_code == 201
    api.post("/api/v1/observability/destinations", {**langfuse, "type": "nope"}, format="json")

    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", timeout=30) as client:

        def respond(key: str, **body):
            payload = {"model": "fakeai/good", "input": "hello", **body}
            response = client.post("/responses", json=payload, headers={"Authorization": f"Bearer {key}"})
            wait_idle()
            return response

        assert respond(org.inference_key).status_code == 200
        assert respond(created_key, stream=True).status_code == 200
        assert respond(org.inference_key, model="fakeai/fail-500").status_code >= 500
        respond(org.inference_key, model="fakeai/fail-400")
        fake_upstream.rejected_keys = {BYOK_KEY, PLATFORM_KEY}  # the upstream 401 quotes the key
        assert respond(org.inference_key).status_code >= 400
        respond(org.management_key)  # a management key on the data plane
        respond("sk-gw-v1-not-a-key")
        api.patch(f"/api/v1/byok/{credential.json()['data']['id']}", {"key": BYOK_ROTATED}, format="json")
        fake_upstream.rejected_keys = set()
        assert respond(org.inference_key).status_code == 200

    auths = {request.auth for request in fake_upstream.requests}
    assert {BYOK_KEY, BYOK_ROTATED} <= auths, auths  # the BYOK credential reached the upstream, both versions
    make_worker().drain()
    assert receiver.requests, "the webhook destination received traces"

    text = "\n".join(captured.lines)
    assert len(captured.lines) > 20
    assert "gateway" in text  # the gateway did log during the run
    secrets = {
        "management key": org.management_key,
        "inference key": org.inference_key,
        "created key": created_key,
        "BYOK key": BYOK_KEY,
        "rotated BYOK key": BYOK_ROTATED,
        "webhook secret": WEBHOOK_SECRET,
        "header secret": HEADER_SECRET,
        "langfuse secret": LANGFUSE_SECRET,
        "platform key": PLATFORM_KEY,
    }
    leaked = {name: [line for line in captured.lines if value in line][:2] for name, value in secrets.items()}
    assert not {name: lines for name, lines in leaked.items() if lines}
