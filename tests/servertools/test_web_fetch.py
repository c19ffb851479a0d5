"""service:web_fetch and the guarded fetch: readable text of real loopback pages, the SSRF guard (private
addresses, redirects to them), size and time limits; end to end through the loop."""

from __future__ import annotations

import pytest

from inference.web.fetch import FetchError, fetch
from inference.web.readable import html_text
from tests.fakes.fake_web import page
from tests.servertools.conftest import MODEL, call, text

ARTICLE = """<!doctype html><html><head><title>Paris in spring</title><style>p{color:red}</style>
<script>var secret = "do not read";</script></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<header>Site banner</header>
<main><h1>Paris in spring</h1><p>The chestnut trees bloom in April along the Seine, and the parks fill
with people.</p><ul><li>Jardin du Luxembourg</li><li>Parc des Buttes-Chaumont</li></ul>
<p>Evenings stay light until after nine o'clock in late spring, which makes long walks easy.</p></main>
<footer>Copyright notice</footer></body></html>"""


@pytest.fixture
def loopback_allowed(settings):
    settings.GATEWAY_WEB_FETCH_ALLOWLIST = ["127.0.0.1/32"]
    settings.GATEWAY_WEB_FETCH_TIMEOUT = 3.0
    return settings


def test_html_text_keeps_the_content_and_drops_the_chrome():
    title, body = html_text(ARTICLE)
    assert title == "Paris in spring"
    assert body.startswith("# Paris in spring\nThe chestnut trees bloom")
    assert "- Jardin du Luxembourg\n- Parc des Buttes-Chaumont" in body
    for chrome in ("Home", "Site banner", "Copyright", "secret", "color:red"):
        assert chrome not in body


async def test_fetch_reads_a_page(fake_web, loopback_allowed):
    fake_web.pages["paris"] = page(ARTICLE)
    result = await fetch(f"{fake_web.url}/pages/paris")
    assert result.status == 200 and result.content_type == "text/html" and b"chestnut" in result.body


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.1.2.3/",
        "http://[::1]/",
        "http://0.0.0.0/",
        "file:///etc/passwd",
        "gopher://example.com/",
    ],
)
async def test_private_addresses_and_other_schemes_are_refused(loopback_allowed, url):
    with pytest.raises(FetchError):
        await fetch(url)


async def test_loopback_is_refused_unless_allowlisted(fake_web, settings):
    settings.GATEWAY_WEB_FETCH_ALLOWLIST = []
    settings.GATEWAY_ALLOW_PRIVATE_URLS = True  # the admin-URL switch does not open web fetch
    fake_web.pages["paris"] = page(ARTICLE)
    with pytest.raises(FetchError, match="private or reserved"):
        await fetch(f"{fake_web.url}/pages/paris")
    with pytest.raises(FetchError, match="resolves to a private or reserved address"):
        await fetch(f"http://localhost:{fake_web.port}/pages/paris")
    assert fake_web.requests == []


async def test_redirect_to_a_private_address_is_refused(fake_web, loopback_allowed):
    with pytest.raises(FetchError, match="169.254.169.254 is a private or reserved address"):
        await fetch(f"{fake_web.url}/redirect?to=http://169.254.169.254/latest/meta-data/")
    fake_web.pages["ok"] = page("<p>fine</p>")
    result = await fetch(f"{fake_web.url}/redirect?to=/pages/ok")
    assert result.url.endswith("/pages/ok") and result.body == b"<p>fine</p>"


async def test_size_and_time_limits(fake_web, loopback_allowed):
    loopback_allowed.GATEWAY_WEB_FETCH_MAX_BYTES = 100_000
    result = await fetch(f"{fake_web.url}/huge")
    assert result.truncated and len(result.body) == 100_000
    loopback_allowed.GATEWAY_WEB_FETCH_TIMEOUT = 0.3
    with pytest.raises(FetchError, match="no complete answer within 0.3 s"):
        await fetch(f"{fake_web.url}/slow")


def test_model_fetches_a_page_and_cites_it(agent, agent_catalog, fake_web, loopback_allowed):
    fake_web.pages["paris"] = page(ARTICLE)
    url = f"{fake_web.url}/pages/paris"
    agent_catalog.script = [call("web_fetch", f'{{"url": "{url}"}}'), text(f"Chestnuts bloom in April ({url}).")]
    tool = {"type": "service:web_fetch", "parameters": {"max_chars": 150}}
    response = agent.post("/responses", json={"model": MODEL, "input": "Read it.", "tools": [tool]})
    assert response.status_code == 200, response.text
    item, message = response.json()["output"]
    assert item["type"] == "service:web_fetch" and item["status"] == "completed"
    assert item["action"] == {"type": "open_page", "url": url}
    assert item["title"] == "Paris in spring" and item["truncated"] is True
    seen = agent_catalog.requests[1].body["input"][-1]["output"]
    assert seen.startswith(f"Title: Paris in spring\nURL: {url}\n\n# Paris in spring") and "Site banner" not in seen
    annotation = message["content"][0]["annotations"][0]
    assert annotation["url"] == url and annotation["title"] == "Paris in spring"


def test_refused_fetch_is_told_to_the_model(agent, agent_catalog, fake_web, loopback_allowed):
    agent_catalog.script = [call("web_fetch", '{"url": "http://169.254.169.254/"}'), text("I cannot.")]
    response = agent.post("/responses", json={"model": MODEL, "input": "x", "tools": [{"type": "service:web_fetch"}]})
    item = response.json()["output"][0]
    assert item["status"] == "failed" and "private or reserved" in item["error"]
    assert "could not be fetched" in agent_catalog.requests[1].body["input"][-1]["output"]


def test_invalid_max_chars_is_400(agent, agent_catalog):
    tool = {"type": "service:web_fetch", "parameters": {"max_chars": 5}}
    response = agent.post("/responses", json={"model": MODEL, "input": "x", "tools": [tool]})
    assert response.status_code == 400
    assert response.json()["error"]["metadata"]["field"] == "tools[0].parameters.max_chars"
