"""A fake web for the server tools: a real aiohttp server on an ephemeral loopback port, in a thread.

It speaks the real protocols of the search engines the gateway supports, and serves web pages:

- `GET /search?q=...&format=json`         SearXNG's JSON API (`{"query", "results": [{url, title, content}]}`);
                                          `format` other than json → 403, as SearXNG does when JSON is off
- `GET /res/v1/web/search?q=...&count=N`  Brave Search API (`{"web": {"results": [{title, url, description}]}}`);
                                          needs `X-Subscription-Token: fake.brave_key` (else 401)
- `POST /tavily/search` {query, max_results, ...}  Tavily's search API (`{"query", "results": [{title, url,
                                          content, score, published_date}], "response_time"}`); needs
                                          `Authorization: Bearer fake.tavily_key` (else 401); the JSON body
                                          is recorded as the query dict
- `GET /pages/<name>`                     `fake.pages[name]` = (status, content type, body bytes)
- `GET /redirect?to=<url>`                302 to `to`
- `GET /slow`                             waits `fake.slow_seconds` before answering (`fake.most_in_flight`:
                                          the most /slow requests answered at once)
- `GET /huge`                             an endless text/html body (bounded only by the client)

`fake.results` is the list of results both engines return (dicts with title, url, snippet).
`fake.requests` records (path, query dict, headers) of every request. `fake.reset()` restores the defaults.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field

from aiohttp import web

DEFAULT_RESULTS = [
    {"title": "Paris weather today", "url": "https://weather.example.com/paris", "snippet": "Sunny, 21 °C."},
    {"title": "Paris forecast", "url": "https://meteo.example.org/paris/", "snippet": "Clear skies all week."},
    {"title": "Climate of Paris", "url": "https://wiki.example.net/Paris_climate", "snippet": "Oceanic climate."},
]


@dataclass
class FakeWeb:
    results: list[dict[str, str]] = field(default_factory=lambda: [dict(r) for r in DEFAULT_RESULTS])
    brave_key: str = "brave-test-key"
    tavily_key: str = "tvly-test-key"
    pages: dict[str, tuple[int, str, bytes]] = field(default_factory=dict)
    slow_seconds: float = 5.0

    def __post_init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], dict[str, str]]] = []
        self.in_flight = self.most_in_flight = 0  # requests to /slow being answered now, and the most at once
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeWeb:
        started = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(started,), daemon=True, name="fake-web")
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("fake web did not start")
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop = None

    def reset(self) -> None:
        defaults = FakeWeb()
        self.requests.clear()
        self.results, self.brave_key, self.tavily_key = defaults.results, defaults.brave_key, defaults.tavily_key
        self.pages, self.slow_seconds = defaults.pages, defaults.slow_seconds
        self.most_in_flight = 0

    def searches(self) -> list[str]:
        """The queries the engines received, in order."""
        searches = {"/search": "q", "/res/v1/web/search": "q", "/tavily/search": "query"}
        return [str(query.get(searches[path], "")) for path, query, _ in self.requests if path in searches]

    def _serve(self, started: threading.Event) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.add_routes(
            [
                web.get("/search", self._searxng),
                web.get("/res/v1/web/search", self._brave),
                web.post("/tavily/search", self._tavily),
                web.get("/pages/{name}", self._page),
                web.get("/redirect", self._redirect),
                web.get("/slow", self._slow),
                web.get("/huge", self._huge),
            ]
        )
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        started.set()
        self._loop.run_forever()

    def _record(self, request: web.Request) -> None:
        self.requests.append((request.path, dict(request.query), {k.lower(): v for k, v in request.headers.items()}))

    async def _searxng(self, request: web.Request) -> web.Response:
        self._record(request)
        if request.query.get("format") != "json":
            return web.Response(status=403, text="Forbidden")
        results = [
            {"url": r["url"], "title": r["title"], "content": r["snippet"], "engine": "fake"} for r in self.results
        ]
        return web.json_response({"query": request.query.get("q", ""), "number_of_results": 0, "results": results})

    async def _brave(self, request: web.Request) -> web.Response:
        self._record(request)
        if request.headers.get("X-Subscription-Token") != self.brave_key:
            return web.json_response({"type": "ErrorResponse", "error": {"status": 401}}, status=401)
        count = int(request.query.get("count", "20"))
        results = [
            {"title": r["title"], "url": r["url"], "description": f"<strong>{r['snippet']}</strong>"}
            for r in self.results[:count]
        ]
        return web.json_response(
            {"type": "search", "query": {"original": request.query.get("q")}, "web": {"results": results}}
        )

    async def _tavily(self, request: web.Request) -> web.Response:
        body = await request.json()
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.requests.append((request.path, body, headers))
        if request.headers.get("Authorization") != f"Bearer {self.tavily_key}":
            return web.json_response({"detail": {"error": "Unauthorized: missing or invalid API key."}}, status=401)
        results = [
            {"title": r["title"], "url": r["url"], "content": r["snippet"], "score": 0.9 - i / 10, "raw_content": None}
            | ({"published_date": r["published"]} if r.get("published") else {})
            for i, r in enumerate(self.results[: int(body.get("max_results", 5))])
        ]
        return web.json_response({"query": body.get("query"), "results": results, "response_time": 0.01})

    async def _page(self, request: web.Request) -> web.Response:
        self._record(request)
        status, content_type, body = self.pages.get(request.match_info["name"], (404, "text/plain", b"not found"))
        return web.Response(status=status, body=body, headers={"Content-Type": content_type})

    async def _redirect(self, request: web.Request) -> web.Response:
        self._record(request)
        raise web.HTTPFound(request.query["to"])

    async def _slow(self, request: web.Request) -> web.Response:
        self._record(request)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.slow_seconds)
        finally:
            self.in_flight -= 1
        return web.Response(text="<p>late</p>", content_type="text/html")

    async def _huge(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        chunk = b"<p>" + b"x" * 65536 + b"</p>"
        try:
            for _ in range(10_000):
                await response.write(chunk)
        except (ConnectionError, asyncio.CancelledError):
            pass
        return response


def page(html: str, status: int = 200, content_type: str = "text/html; charset=utf-8") -> tuple[int, str, bytes]:
    return status, content_type, html.encode()
