"""The web fetch (`service:web_fetch`, the `web-fetch` plugin) never reaches a private address, however the URL
writes it: every numeric form the socket layer reads as an IPv4 address, IPv4-mapped IPv6, a trailing dot,
a redirect from an allowed page, or a host name whose DNS answer is private. The page on loopback is the
"internal" service; it must never see a request. A fake DNS answer (socket.getaddrinfo) stands for names."""

from __future__ import annotations

import socket

import pytest

from inference.web.fetch import FetchError, fetch
from tests.fakes.fake_web import page
from tests.servertools.conftest import MODEL, call, text

# Every one of these connects to 127.0.0.1 (or 0.0.0.0, which Linux routes to loopback).
LOOPBACK_FORMS = [
    "2130706433",
    "127.1",
    "0",
    "0177.0.0.1",
    "127.000.000.001",
    "0x7f000001",
    "0x7f.1",
    "127.0.0.1.",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::1]",
    "LOCALHOST",
    "１２７.０.０.１",  # full-width digits: IDNA maps them to 127.0.0.1 before the connector sees the host
]
METADATA_DECIMAL = "2852039166"  # 169.254.169.254
INTERNAL = "intranet.example"
ALLOWED = "allowed.example"


@pytest.fixture
def guard_on(settings, fake_web):
    """The suite allows private addresses for admin URLs; the web fetch has its own (empty) allowlist."""
    settings.GATEWAY_ALLOW_PRIVATE_URLS = True  # must not open the web fetch
    settings.GATEWAY_WEB_FETCH_ALLOWLIST = []
    settings.GATEWAY_WEB_FETCH_TIMEOUT = 3.0
    fake_web.pages["secret"] = page("<p>internal secret</p>")
    return settings


@pytest.fixture
def fake_dns(monkeypatch):
    """`intranet.example` and `allowed.example` resolve to 127.0.0.1 (only through this answer: no DNS here)."""
    real = socket.getaddrinfo
    asked: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        if isinstance(host, str) and host.rstrip(".").lower() in (INTERNAL, ALLOWED):
            asked.append(host)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port or 0))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


@pytest.mark.parametrize("host", LOOPBACK_FORMS)
async def test_every_form_of_a_loopback_address_is_refused(fake_web, guard_on, host):
    with pytest.raises(FetchError, match="private or reserved address"):
        await fetch(f"http://{host}:{fake_web.port}/pages/secret")
    assert fake_web.requests == []


@pytest.mark.parametrize("host", ["1.2.3.4.5", "08.0.0.1", "256.256.256.256.256"])
async def test_a_numeric_host_no_resolver_reads_is_refused(fake_web, guard_on, host):
    with pytest.raises(FetchError, match="not a valid address"):
        await fetch(f"http://{host}:{fake_web.port}/pages/secret")


async def test_the_decimal_metadata_address_is_refused_before_connecting(guard_on):
    with pytest.raises(FetchError, match=r"2852039166 is a private or reserved address \(169.254.169.254\)"):
        await fetch(f"http://{METADATA_DECIMAL}/latest/meta-data/")


@pytest.mark.parametrize("host", ["2130706433", "127.1", "0x7f000001", "[::ffff:127.0.0.1]", "127.0.0.1.", INTERNAL])
async def test_a_redirect_from_an_allowed_page_to_any_form_is_refused(fake_web, guard_on, fake_dns, host):
    guard_on.GATEWAY_WEB_FETCH_ALLOWLIST = [ALLOWED]  # allowed by name, whatever its addresses
    with pytest.raises(FetchError, match="private or reserved address"):
        await fetch(f"http://{ALLOWED}:{fake_web.port}/redirect?to=http://{host}:{fake_web.port}/pages/secret")
    assert [path for path, _, _ in fake_web.requests] == ["/redirect"]


async def test_a_redirect_hop_is_checked_after_an_allowed_first_hop(fake_web, guard_on):
    guard_on.GATEWAY_WEB_FETCH_ALLOWLIST = ["127.0.0.1/32"]
    with pytest.raises(FetchError, match=r"2852039166 is a private or reserved address \(169.254.169.254\)"):
        await fetch(f"{fake_web.url}/redirect?to=http://{METADATA_DECIMAL}/latest/meta-data/")
    assert [path for path, _, _ in fake_web.requests] == ["/redirect"]


async def test_a_name_resolving_to_a_private_address_is_refused(fake_web, guard_on, fake_dns):
    with pytest.raises(FetchError, match=r"intranet.example resolves to a private or reserved address \(127.0.0.1\)"):
        await fetch(f"http://{INTERNAL}:{fake_web.port}/pages/secret")
    assert fake_web.requests == []


async def test_an_allowed_name_is_resolved_once_and_connected_to_the_checked_address(fake_web, guard_on, fake_dns):
    """The guard's own answer is what the connection uses: no second resolution a rebinding DNS could change."""
    guard_on.GATEWAY_WEB_FETCH_ALLOWLIST = ["127.0.0.0/8"]
    result = await fetch(f"http://{INTERNAL}:{fake_web.port}/pages/secret")
    assert result.body == b"<p>internal secret</p>"
    assert fake_dns == [INTERNAL]
    assert fake_web.requests[0][2]["host"] == f"{INTERNAL}:{fake_web.port}"


def test_service_web_fetch_on_a_decimal_address_reaches_nothing(agent, agent_catalog, fake_web, guard_on):
    url = f"http://2130706433:{fake_web.port}/pages/secret"
    agent_catalog.script = [call("web_fetch", f'{{"url": "{url}"}}'), text("I cannot read it.")]
    response = agent.post("/responses", json={"model": MODEL, "input": "x", "tools": [{"type": "service:web_fetch"}]})
    assert response.status_code == 200, response.text
    item = response.json()["output"][0]
    assert item["status"] == "failed" and "2130706433 is a private or reserved address (127.0.0.1)" in item["error"]
    seen = agent_catalog.requests[1].body["input"][-1]["output"]
    assert "could not be fetched" in seen and "internal secret" not in seen
    assert fake_web.requests == []


@pytest.mark.parametrize("host", ["127.1", "0177.0.0.1", "127.000.000.001", "0"])
def test_web_fetch_plugin_on_short_and_octal_forms_reaches_nothing(agent, agent_catalog, fake_web, guard_on, host):
    url = f"http://{host}:{fake_web.port}/pages/secret"
    agent_catalog.script = [text("Summary.")]
    message = {"role": "user", "content": f"Summarize {url}"}
    response = agent.post("/responses", json={"model": MODEL, "input": [message], "plugins": [{"id": "web-fetch"}]})
    assert response.status_code == 200, response.text
    system = agent_catalog.requests[0].body["input"][0]["content"]
    assert "could not be fetched" in system and "private or reserved address" in system
    assert "internal secret" not in system
    assert fake_web.requests == []
