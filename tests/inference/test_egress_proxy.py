"""The egress proxy of outbound calls (HTTPS_PROXY / HTTP_PROXY / NO_PROXY), with a real forward proxy on loopback
(tests/fakes/forward_proxy.py): a /api/v1/responses call reaches the fake upstream through it, JSON and
streamed; NO_PROXY bypasses it; its credentials come from the proxy URL; an https:// upstream is reached through
a CONNECT tunnel with its certificate checked end to end; a proxy URL the client cannot use fails the call
rather than going direct; the search engines and the observability delivery go through it too; the model's
web fetch does not (docs/security.md)."""

from __future__ import annotations

import os

import pytest

from inference.providers import upstream
from inference.providers.base import ProviderError, Timeouts, UpstreamRequest
from inference.providers.http import close_session, post_json
from inference.search.base import EngineConfig
from inference.search.searxng import SearxngEngine
from tests.fakes.forward_proxy import ForwardProxy
from tests.fakes.raw_upstream import Server, fixed, ok
from tests.inference.conftest import generations
from tests.inference.test_fallback import ON, endpoint
from tests.inference.test_responses import sse_events
from tests.inference.test_upstream_client import tls_server_context

VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "SSL_CERT_FILE")


@pytest.fixture
def proxy_env():
    """`set(**variables)` sets proxy variables for the outbound calls (every other one unset); all restored
    after the test."""
    saved = {name: os.environ.get(name) for name in VARIABLES}

    def set_variables(**variables: str) -> None:
        for name in VARIABLES:
            os.environ.pop(name, None)
        os.environ.update(variables)
        upstream.reload()

    yield set_variables
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    upstream.reload()


@pytest.fixture
def proxy():
    server = ForwardProxy().start()
    yield server
    server.stop()


pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_responses_call_reaches_the_upstream_through_the_proxy(http, upstream_key, proxy, proxy_env, stream):
    endpoint("t/model", "p-proxied", "good", upstream_key)
    proxy_env(HTTP_PROXY=proxy.url, HTTPS_PROXY=proxy.url)
    response = http.post("/responses", json={"model": "t/model", "input": "hi", "stream": stream}, headers=ON)
    assert response.status_code == 200, response.text
    if stream:
        assert [event for event in sse_events(response.text) if event != "[DONE]"][-1]["type"] == "response.completed"
    else:
        assert response.json()["output"][0]["content"][0]["text"] == "Hello from the fake upstream."
    ((method, target, headers),) = proxy.relayed
    assert (method, target) == ("POST", f"{upstream_key.base_url}/chat/completions")  # absolute form
    assert headers["authorization"] == "Bearer sk-fake-platform" and "user-agent" not in headers
    assert len(upstream_key.requests) == 1
    assert generations(1)[0].provider == "p-proxied"


def test_no_proxy_bypasses_the_proxy(http, upstream_key, proxy, proxy_env):
    endpoint("t/model", "p-direct", "good", upstream_key)
    proxy_env(HTTP_PROXY=proxy.url, NO_PROXY="localhost,127.0.0.1")
    response = http.post("/responses", json={"model": "t/model", "input": "hi"}, headers=ON)
    assert response.status_code == 200, response.text
    assert proxy.relayed == [] and len(upstream_key.requests) == 1


@pytest.fixture
def upstream_key(fake_upstream, monkeypatch, echo_catalog):
    monkeypatch.setenv("FAKE_UPSTREAM_TEST_KEY", "sk-fake-platform")
    return fake_upstream


async def test_proxy_credentials_come_from_the_proxy_url_and_stay_with_the_proxy(proxy_env):
    proxy = ForwardProxy(credentials="corp:s3cret").start()
    try:
        async with Server(fixed(ok(b'{"via":"proxy"}'))) as origin:
            await close_session()
            proxy_env(HTTP_PROXY=proxy.url)
            assert await post_json(UpstreamRequest(origin.url, {}, {}), Timeouts(), "sk") == {"via": "proxy"}
            assert proxy.relayed[0][2]["proxy-authorization"] == "Basic Y29ycDpzM2NyZXQ="
            assert b"proxy-authorization" not in origin.requests[0].lower()
            proxy_env(HTTP_PROXY=proxy.url.replace("s3cret", "wrong"))
            with pytest.raises(ProviderError) as refused:
                await post_json(UpstreamRequest(origin.url, {}, {}), Timeouts(), "sk")
            assert refused.value.status == 407 and len(origin.requests) == 1
    finally:
        proxy.stop()
        await close_session()


async def test_an_https_upstream_is_reached_through_a_connect_tunnel(proxy, proxy_env, tmp_path):
    server_tls, cert_file = tls_server_context(tmp_path)
    async with Server(fixed(ok(b'{"tls":"tunnelled"}')), tls=server_tls) as origin:
        proxy_env(HTTPS_PROXY=proxy.url, SSL_CERT_FILE=cert_file)
        await close_session()  # the trusted CAs are read when the session is made
        try:
            assert await post_json(UpstreamRequest(origin.url, {}, {}), Timeouts(), "sk") == {"tls": "tunnelled"}
        finally:
            await close_session()
        assert [(method, target) for method, target, _ in proxy.relayed] == [("CONNECT", f"127.0.0.1:{origin.port}")]
        assert origin.requests[0].startswith(b"POST /v1/echo?x=1 HTTP/1.1\r\n")  # inside the tunnel, origin form


@pytest.mark.parametrize("value", ["socks5://127.0.0.1:1080", "https://proxy.example:3128"])
async def test_a_proxy_the_client_cannot_use_fails_the_call_instead_of_going_direct(proxy_env, value):
    async with Server(fixed(ok(b"{}"))) as origin:
        proxy_env(HTTP_PROXY=value)
        with pytest.raises(ProviderError, match="cannot connect to upstream: HTTP_PROXY must be") as caught:
            await post_json(UpstreamRequest(origin.url, {}, {}), Timeouts(), "sk")
        assert not caught.value.maybe_billed and origin.requests == []
    await close_session()


async def test_web_search_goes_through_the_proxy(fake_web, proxy, proxy_env):
    proxy_env(HTTP_PROXY=proxy.url)
    engine = SearxngEngine(EngineConfig(name="searxng", url=fake_web.url))
    results = await engine.search("paris", 3)
    assert results and fake_web.searches() == ["paris"]
    ((method, target, _),) = proxy.relayed
    assert method == "GET" and target.startswith(f"{fake_web.url}/search?q=paris")
    await close_session()


async def test_web_fetch_does_not_go_through_the_proxy(fake_web, proxy, proxy_env, settings):
    from inference.web.fetch import fetch
    from tests.fakes.fake_web import page

    settings.GATEWAY_WEB_FETCH_ALLOWLIST = ["127.0.0.1/32"]
    fake_web.pages["direct"] = page("<html><body><p>fetched directly</p></body></html>")
    proxy_env(HTTP_PROXY=proxy.url, HTTPS_PROXY=proxy.url)
    result = await fetch(f"{fake_web.url}/pages/direct")
    assert b"fetched directly" in result.body and proxy.relayed == []
