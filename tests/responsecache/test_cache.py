"""The response cache as clients see it, over the loopback server with the official openai and anthropic SDKs
against the fake OpenAI-chat upstream: misses and hits (the upstream sees one call), streamed replays in every wire
format, TTLs, organizations, guardrails and rate limits still applied, the Generation rows, the database path
when Redis fails, the purge API, the workspace setting, the size bounds and the header validation."""

from __future__ import annotations

import os
import time

import httpx
import openai
import pytest
from django.core.management import call_command

from responsecache.models import ResponseCacheEntry
from tests.conftest import free_port
from tests.inference.conftest import generations, wait_idle
from tests.responsecache.conftest import MODEL, OTHER_MODEL, TOOL_MODEL

pytestmark = pytest.mark.django_db(transaction=True)
TEXT = "Hello from the fake upstream."
ON = {"X-Service-Cache": "enabled"}
MESSAGE = [{"type": "message", "role": "user", "content": "Say hello"}]


def ask(client, headers=ON, model=MODEL, text="Say hello", **fields):
    """POST /responses through the openai SDK: (raw response, parsed response), after the gateway is idle."""
    raw = client.responses.with_raw_response.create(
        model=model, input=text, max_output_tokens=50, extra_headers=headers, **fields
    )
    wait_idle()
    return raw, raw.parse()


def cache_header(raw) -> str | None:
    return raw.headers.get("x-service-cache")


def key_usage(gateway_server, org) -> float:
    answer = httpx.get(
        f"{gateway_server.url}/api/v1/key", headers={"Authorization": f"Bearer {org.inference_key}"}, timeout=30
    )
    return answer.json()["data"]["usage"]


def test_miss_then_hit_json_one_upstream_call_and_generation_rows(oai, upstream, gateway_server, org):
    first_raw, first = ask(oai)
    assert cache_header(first_raw) == "MISS"
    deadline = time.monotonic() + 10
    while key_usage(gateway_server, org) == 0 and time.monotonic() < deadline:  # spend is settled after the answer
        time.sleep(0.05)
    spent = key_usage(gateway_server, org)
    assert spent > 0
    second_raw, second = ask(oai)
    assert cache_header(second_raw) == "HIT"
    assert second.output_text == first.output_text == TEXT
    assert second.id != first.id and second.model == first.model == MODEL
    assert (second.usage.input_tokens, second.usage.output_tokens) == (
        first.usage.input_tokens,
        first.usage.output_tokens,
    )
    assert first.usage.model_extra["cost"] > 0 and second.usage.model_extra["cost"] == 0
    assert len(upstream.requests) == 1
    miss_row, hit_row = generations(2)
    assert (miss_row.cache_hit, hit_row.cache_hit) == (False, True)
    assert miss_row.cost > 0 and hit_row.cost == 0
    assert (hit_row.model, hit_row.provider, hit_row.status, hit_row.streamed) == (
        MODEL,
        "fake-chat",
        "completed",
        False,
    )
    assert hit_row.output_tokens == miss_row.output_tokens
    assert key_usage(gateway_server, org) == spent  # budgets untouched by the hit
    lookup = httpx.get(
        f"{gateway_server.url}/api/v1/generation",
        params={"id": second_raw.headers["x-request-id"]},
        headers={"Authorization": f"Bearer {org.inference_key}"},
        timeout=30,
    ).json()["data"]
    assert (lookup["cache_hit"], lookup["total_cost"]) == (True, 0)


def test_a_streamed_miss_is_replayed_as_a_stream_in_each_requested_format(oai, upstream):
    raw = oai.chat.completions.with_raw_response.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Say hello"}],
        max_tokens=50,
        stream=True,
        stream_options={"include_usage": True},
        extra_headers=ON,
    )
    chunks = list(raw.parse())
    wait_idle()
    assert cache_header(raw) == "MISS"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == TEXT
    # The same canonical request through /responses, streamed: replayed from the entry as Responses events.
    raw = oai.responses.with_raw_response.create(
        model=MODEL, input=MESSAGE, max_output_tokens=50, stream=True, extra_headers=ON
    )
    events = list(raw.parse())
    wait_idle()
    assert cache_header(raw) == "HIT"
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == TEXT
    assert events[-1].response.usage.model_extra["cost"] == 0
    # And as a chat completion stream again, and as JSON.
    raw = oai.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "Say hello"}], max_tokens=50, stream=True, extra_headers=ON
    )
    chunks = list(raw.parse())
    wait_idle()
    assert cache_header(raw) == "HIT"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == TEXT
    assert chunks[-1].choices[0].finish_reason == "stop"
    raw = oai.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "Say hello"}], max_tokens=50, extra_headers=ON
    )
    wait_idle()
    assert cache_header(raw) == "HIT" and raw.parse().choices[0].message.content == TEXT
    assert len(upstream.requests) == 1
    rows = generations(4)
    assert [(r.cache_hit, r.streamed, r.ingress_format) for r in rows] == [
        (False, True, "chat-completions"),
        (True, True, "responses"),
        (True, True, "chat-completions"),
        (True, False, "chat-completions"),
    ]


def test_anthropic_sdk_json_miss_then_streamed_hit(claude, oai, upstream):
    raw = claude.messages.with_raw_response.create(
        model=MODEL, max_tokens=50, messages=[{"role": "user", "content": "Say hello"}], extra_headers=ON
    )
    wait_idle()
    assert cache_header(raw) == "MISS" and raw.parse().content[0].text == TEXT
    with claude.messages.with_streaming_response.create(
        model=MODEL, max_tokens=50, messages=[{"role": "user", "content": "Say hello"}], stream=True, extra_headers=ON
    ) as response:
        assert cache_header(response) == "HIT"
        body = response.read().decode()
    wait_idle()
    assert "event: message_start" in body and "event: message_stop" in body and '"text_delta"' in body
    assert TEXT in body.replace('\\"', '"')
    # The Messages content blocks are `input_text` parts in the canonical request: /responses shares the entry.
    parts = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Say hello"}]}]
    raw, answer = ask(oai, text=parts)
    assert cache_header(raw) == "HIT" and answer.output_text == TEXT
    assert len(upstream.requests) == 1


def test_ttl_expiry_and_the_age_a_request_accepts(oai, upstream):
    raw, _ = ask(oai, headers={**ON, "X-Service-Cache-TTL": "60"})
    assert cache_header(raw) == "MISS"
    time.sleep(1.5)
    raw, _ = ask(oai, headers={**ON, "X-Service-Cache-TTL": "1"})  # the entry is older than this request accepts
    assert cache_header(raw) == "MISS"
    time.sleep(1.5)
    raw, _ = ask(oai, headers={**ON, "X-Service-Cache-TTL": "60"})  # the answer stored for 1 s has expired
    assert cache_header(raw) == "MISS"
    raw, _ = ask(oai, headers={**ON, "X-Service-Cache-TTL": "60"})
    assert cache_header(raw) == "HIT"
    assert len(upstream.requests) == 3


def test_another_organization_misses(oai, upstream, gateway_server, other_org):
    raw, _ = ask(oai)
    assert cache_header(raw) == "MISS"
    other = openai.OpenAI(base_url=f"{gateway_server.url}/api/v1", api_key=other_org.inference_key, max_retries=0)
    raw, answer = ask(other)
    assert cache_header(raw) == "MISS" and answer.output_text == TEXT
    assert len(upstream.requests) == 2
    raw, _ = ask(other)
    assert cache_header(raw) == "HIT"


def test_non_semantic_fields_share_an_entry_and_semantic_ones_do_not(oai, upstream):
    ask(oai, metadata={"run": "1"}, user="alice")
    raw, _ = ask(oai, metadata={"run": "2"}, user="bob", extra_body={"session_id": "s-2", "trace": {"t": 1}})
    assert cache_header(raw) == "HIT"
    raw, _ = ask(oai, temperature=0.5)
    assert cache_header(raw) == "MISS"
    raw, _ = ask(oai, model=OTHER_MODEL)
    assert cache_header(raw) == "MISS"
    assert len(upstream.requests) == 3


def test_a_guardrail_change_blocks_a_would_be_hit(oai, upstream, org):
    ask(oai)
    created = org.client().post(
        "/api/v1/guardrails", {"name": "no cache model", "ignored_models": [MODEL]}, format="json"
    )
    assert created.status_code == 201, created.json()
    guardrail_id = created.json()["data"]["id"]
    assigned = org.client().post(
        f"/api/v1/guardrails/{guardrail_id}/assignments/keys", {"key_hashes": [org.inference_hash]}, format="json"
    )
    assert assigned.status_code == 200, assigned.json()
    with pytest.raises(openai.PermissionDeniedError) as refused:
        ask(oai)
    assert "x-service-cache" not in refused.value.response.headers
    assert len(upstream.requests) == 1


def test_the_rate_limit_still_applies_to_hits(oai, upstream, org):
    response = org.client().patch(f"/api/v1/keys/{org.inference_hash}", {"requests_per_minute": 2}, format="json")
    assert response.status_code == 200, response.json()
    assert cache_header(ask(oai)[0]) == "MISS"
    raw, _ = ask(oai)
    assert cache_header(raw) == "HIT" and raw.headers["x-ratelimit-remaining-requests"] == "0"
    with pytest.raises(openai.RateLimitError):
        ask(oai)
    assert len(upstream.requests) == 1


def test_redis_down_uses_the_database(oai, upstream, org, settings):
    settings.GATEWAY_RESPONSE_CACHE_REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    raw, _ = ask(oai)
    assert cache_header(raw) == "MISS"
    raw, answer = ask(oai)
    assert cache_header(raw) == "HIT" and answer.output_text == TEXT
    assert len(upstream.requests) == 1
    assert ResponseCacheEntry.objects.filter(organization=org.organization, model=MODEL).count() == 1


def test_purge_api(oai, upstream, mgmt, gateway_server, org, other_org):
    ask(oai)
    ask(oai, model=OTHER_MODEL)
    refused = httpx.post(
        f"{gateway_server.url}/api/v1/cache/purge",
        json={},
        headers={"Authorization": f"Bearer {org.inference_key}"},
        timeout=30,
    )
    assert refused.status_code == 403
    unknown = mgmt.post("/cache/purge", json={"models": [MODEL]})
    assert unknown.status_code == 400 and "models" in unknown.json()["error"]["message"]
    elsewhere = other_org.client().post("/api/v1/cache/purge", {}, format="json")
    assert elsewhere.json() == {"data": {"purged": 0}}
    assert mgmt.post("/cache/purge", json={"model": MODEL}).json() == {"data": {"purged": 1}}
    assert cache_header(ask(oai)[0]) == "MISS"
    assert cache_header(ask(oai, model=OTHER_MODEL)[0]) == "HIT"
    assert mgmt.post("/cache/purge", json={}).json() == {"data": {"purged": 2}}
    assert cache_header(ask(oai)[0]) == "MISS"
    assert cache_header(ask(oai, model=OTHER_MODEL)[0]) == "MISS"
    assert len(upstream.requests) == 5

    # each purge is in its organization's audit log: who, what, when, how many entries
    purges = mgmt.get("/audit-log", params={"action": "purge"}).json()["data"]
    assert [(p["resource_type"], p["resource_id"], p["changes"]) for p in purges] == [
        ("response_cache", "", {"purged": 2, "model": None}),
        ("response_cache", MODEL, {"purged": 1, "model": MODEL}),
    ]  # newest first; the refused (403) and invalid (400) calls purged nothing and left no record
    assert all(p["source"] == "api" and p["actor_type"] == "api_key" for p in purges)
    assert all((p["actor"], p["actor_name"]) == (org.management_hash, "mgmt") for p in purges)
    assert purges[0]["created_at"] >= purges[1]["created_at"] and purges[1]["resource_label"] == MODEL
    elsewhere_log = other_org.client().get("/api/v1/audit-log", {"action": "purge"}).json()["data"]
    assert [(p["actor"], p["changes"]) for p in elsewhere_log] == [
        (other_org.management_hash, {"purged": 0, "model": None})
    ]


def test_purge_command_is_in_the_audit_log(oai, upstream, mgmt, org, capsys):
    ask(oai)
    call_command("purge_response_cache", "--organization", str(org.organization.id))
    assert "1 entries deleted" in capsys.readouterr().out
    call_command("purge_response_cache", "--expired")  # the periodic clean-up: no record
    [record] = mgmt.get("/audit-log", params={"source": "command"}).json()["data"]
    assert (record["action"], record["resource_type"], record["changes"]) == (
        "purge", "response_cache", {"purged": 1, "model": None})  # fmt: skip
    assert record["actor_type"] == "system_user" and record["actor"]
    assert record["actor_name"] == "manage.py purge_response_cache"


def test_workspace_setting(oai, upstream, mgmt, org):
    path = f"/workspaces/{org.workspace.id}"
    assert mgmt.get(path).json()["data"]["response_cache_enabled"] is False
    changed = mgmt.patch(path, json={"response_cache_enabled": True})
    assert changed.status_code == 200 and changed.json()["data"]["response_cache_enabled"] is True
    assert mgmt.patch(path, json={"response_cache_enabled": "sometimes"}).status_code == 400
    assert cache_header(ask(oai, headers={})[0]) == "MISS"
    assert cache_header(ask(oai, headers={"X-Service-Cache-TTL": "30"})[0]) == "HIT"
    raw, _ = ask(oai, headers={"X-Service-Cache": "disabled"})
    assert cache_header(raw) is None
    assert len(upstream.requests) == 2
    # A request the cache cannot serve in a caching workspace goes through, marked BYPASS.
    raw, _ = ask(oai, headers={}, extra_body={"debug": {"echo_upstream_body": True}})
    assert cache_header(raw) == "BYPASS"
    created = mgmt.post("/workspaces", json={"name": "Cached", "response_cache_enabled": True})
    assert created.status_code == 201 and created.json()["data"]["response_cache_enabled"] is True


def test_entry_size_and_count_bounds(oai, upstream, settings):
    settings.GATEWAY_RESPONSE_CACHE_MAX_ENTRY_BYTES = 100  # smaller than any answer
    ask(oai)
    assert cache_header(ask(oai)[0]) == "MISS"
    settings.GATEWAY_RESPONSE_CACHE_MAX_ENTRY_BYTES = 1_048_576
    settings.GATEWAY_RESPONSE_CACHE_MAX_ENTRIES = 1
    ask(oai, text="first")
    ask(oai, text="second")  # drops the first
    assert cache_header(ask(oai, text="second")[0]) == "HIT"
    assert cache_header(ask(oai, text="first")[0]) == "MISS"
    assert len(upstream.requests) == 5


def test_expired_database_entries_are_purged(oai, upstream, org, settings):
    settings.GATEWAY_RESPONSE_CACHE_REDIS_URL = ""  # the database store
    ask(oai, headers={**ON, "X-Service-Cache-TTL": "1"})
    ask(oai, text="kept", headers={**ON, "X-Service-Cache-TTL": "600"})
    assert ResponseCacheEntry.objects.filter(organization=org.organization).count() == 2
    time.sleep(1.5)
    call_command("purge_response_cache", "--expired")
    assert ResponseCacheEntry.objects.filter(organization=org.organization).count() == 1


@pytest.mark.parametrize(
    ("headers", "field"),
    [
        ({"X-Service-Cache": "yes"}, "X-Service-Cache"),
        ({**ON, "X-Service-Cache-TTL": "0"}, "X-Service-Cache-TTL"),
        ({**ON, "X-Service-Cache-TTL": "ten"}, "X-Service-Cache-TTL"),
        ({**ON, "X-Service-Cache-TTL": "86401"}, "X-Service-Cache-TTL"),
        ({**ON, "X-Service-Cache-TTL": "-5"}, "X-Service-Cache-TTL"),
        ({"X-Service-Cache-TTL": "30"}, "X-Service-Cache-TTL"),
        ({"X-Service-Cache": "disabled", "X-Service-Cache-TTL": "30"}, "X-Service-Cache-TTL"),
    ],
)
def test_wrong_headers_are_400_naming_them(oai, upstream, headers, field):
    with pytest.raises(openai.BadRequestError) as refused:
        ask(oai, headers=headers)
    error = refused.value.response.json()["error"]
    assert error["metadata"]["field"] == field and error["message"].startswith(field)
    assert upstream.requests == []


@pytest.mark.parametrize(
    "extra",
    [
        {"debug": {"echo_upstream_body": True}},
        {"plugins": [{"id": "web"}]},
        {"tools": [{"type": "service:web_search"}]},
    ],
)
def test_an_uncacheable_request_with_the_header_is_400(oai, upstream, extra):
    with pytest.raises(openai.BadRequestError) as refused:
        ask(oai, extra_body=extra)
    error = refused.value.response.json()["error"]
    assert error["metadata"]["field"] == "X-Service-Cache" and "cannot be cached" in error["message"]
    assert upstream.requests == []


def test_function_tool_calls_are_cached_and_replayed(oai, upstream):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    body = {"model": TOOL_MODEL, "messages": [{"role": "user", "content": "Weather?"}], "tools": tools}
    raw = oai.chat.completions.with_raw_response.create(**body, extra_headers=ON)
    wait_idle()
    call = raw.parse().choices[0].message.tool_calls[0]
    assert cache_header(raw) == "MISS" and call.function.name == "get_weather"
    raw = oai.chat.completions.with_raw_response.create(**body, stream=True, extra_headers=ON)
    chunks = list(raw.parse())
    wait_idle()
    assert cache_header(raw) == "HIT"
    calls = [c.choices[0].delta.tool_calls for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert calls[0][0].function.name == "get_weather"
    assert calls[0][0].function.arguments == call.function.arguments
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert len(upstream.requests) == 1


def test_auth_comes_first(gateway_server, upstream):
    answer = httpx.post(
        f"{gateway_server.url}/api/v1/responses",
        json={"model": MODEL, "input": "Say hello"},
        headers={"Authorization": "Bearer sk-not-a-key", **ON},
        timeout=30,
    )
    assert answer.status_code == 401 and "x-service-cache" not in answer.headers


def test_entries_live_in_redis_when_configured_else_in_the_database(oai, upstream, org, settings):
    ask(oai)
    rows = ResponseCacheEntry.objects.filter(organization=org.organization).count()
    if not settings.GATEWAY_RESPONSE_CACHE_REDIS_URL:
        assert rows == 1
        return
    import redis

    from responsecache.redis_store import index_key

    client = redis.Redis.from_url(settings.GATEWAY_RESPONSE_CACHE_REDIS_URL)
    try:
        (member,) = client.zrange(index_key(org.organization.id), 0, -1)
        assert member.decode().endswith(f" {MODEL}") and rows == 0
    finally:
        client.close()


def test_metrics_count_cache_results_and_leave_hit_tokens_out(oai, upstream, gateway_server):
    from tests.operations.test_metrics import delta, recorded, scrape

    recorded()
    before = scrape(gateway_server.url)
    _, first = ask(oai)
    ask(oai)
    ask(oai, headers={})  # not using the cache: not counted
    recorded()
    after = scrape(gateway_server.url)
    assert delta(before, after, "gateway_response_cache_total", result="miss") == 1
    assert delta(before, after, "gateway_response_cache_total", result="hit") == 1
    assert delta(before, after, "gateway_requests_total", model=MODEL) == 3
    tokens = delta(before, after, "gateway_tokens_total", model=MODEL, kind="output")
    assert tokens == 2 * first.usage.output_tokens > 0  # the miss and the uncached request; not the hit
    assert len(upstream.requests) == 2


def test_purge_with_redis_unreachable_is_503(mgmt, settings, org):
    settings.GATEWAY_RESPONSE_CACHE_REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    answer = mgmt.post("/cache/purge", json={})
    assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
    assert "Redis" in answer.json()["error"]["message"]
    settings.GATEWAY_RESPONSE_CACHE_REDIS_URL = ""
    assert mgmt.post("/cache/purge", json={}).json() == {"data": {"purged": 0}}
    complete, partial = mgmt.get("/audit-log", params={"action": "purge"}).json()["data"]
    assert complete["changes"] == {"purged": 0, "model": None}
    assert partial["changes"] == {"purged": 0, "model": None, "redis": "unavailable: its entries were not purged"}


def test_an_entry_from_a_provider_a_guardrail_now_excludes_is_a_miss(oai, upstream, org):
    from tests.inference.conftest import add_endpoint

    add_endpoint(
        MODEL,
        "fake-chat-2",
        api_format="openai-chat",
        base_url=upstream.base_url,
        api_key_env="FAKE_PROVIDER_KEY",
        upstream_model="cache-model",
    )
    ask(oai)
    (first,) = generations(1)
    created = org.client().post(
        "/api/v1/guardrails", {"name": "not that one", "ignored_providers": [first.provider]}, format="json"
    )
    assert created.status_code == 201, created.json()
    assigned = org.client().post(
        f"/api/v1/guardrails/{created.json()['data']['id']}/assignments/keys",
        {"key_hashes": [org.inference_hash]},
        format="json",
    )
    assert assigned.status_code == 200, assigned.json()
    raw, answer = ask(oai)
    assert cache_header(raw) == "MISS" and answer.output_text == TEXT
    second = generations(2)[1]
    assert second.provider != first.provider and not second.cache_hit
    assert len(upstream.requests) == 2


def test_browsers_may_send_the_headers_and_read_the_result(gateway_server, org, upstream, settings):
    settings.GATEWAY_CORS_ALLOWED_ORIGINS = ["https://app.example"]
    origin = {"Origin": "https://app.example"}
    with httpx.Client(base_url=f"{gateway_server.url}/api/v1", timeout=30) as client:
        preflight = client.options(
            "/responses",
            headers={
                **origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type, x-service-cache, x-service-cache-ttl",
            },
        )
        assert preflight.status_code == 204
        assert "x-service-cache-ttl" in preflight.headers["access-control-allow-headers"]
        answer = client.post(
            "/responses",
            json={"model": MODEL, "input": "Say hello"},
            headers={**origin, **ON, "Authorization": f"Bearer {org.inference_key}"},
        )
    assert answer.headers["x-service-cache"] == "MISS"
    assert "x-service-cache" in answer.headers["access-control-expose-headers"]


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL")
def test_redis_black_holed_mid_run_uses_the_database_within_the_timeout(oai, upstream, org, settings):
    from urllib.parse import urlparse

    from tests.fakes.tcp_blackhole import BlackholeProxy

    real = urlparse(os.environ["REDIS_URL"])
    proxy = BlackholeProxy(real.hostname or "127.0.0.1", real.port or 6379).start()
    try:
        settings.GATEWAY_RESPONSE_CACHE_REDIS_URL = f"redis://127.0.0.1:{proxy.port}{real.path or '/0'}"
        assert cache_header(ask(oai)[0]) == "MISS"
        assert cache_header(ask(oai)[0]) == "HIT"  # from Redis
        assert not ResponseCacheEntry.objects.filter(organization=org.organization).exists()
        proxy.blackhole()
        started = time.monotonic()
        raw, answer = ask(oai)  # Redis does not answer: the database has no entry yet
        assert cache_header(raw) == "MISS" and answer.output_text == TEXT
        raw, answer = ask(oai)
        assert cache_header(raw) == "HIT" and answer.output_text == TEXT
        assert time.monotonic() - started < 15  # each Redis call gives up after GATEWAY_RESPONSE_CACHE_REDIS_TIMEOUT_MS
        assert ResponseCacheEntry.objects.filter(organization=org.organization).count() == 1
        assert len(upstream.requests) == 2
    finally:
        proxy.stop()
