"""The search-engine interface: one `search(query, max_results)` call, answered with plain results.

An adapter speaks one engine's HTTP API (inference.search.searxng, inference.search.brave,
inference.search.tavily). Engines are
configured in settings and chosen per workspace or by default (inference.search.engines).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import aiohttp
import orjson
from yarl import URL

from inference.providers import upstream


@dataclass(frozen=True, slots=True)
class SearchResult:
    title: str
    url: str
    snippet: str = ""
    published: str = ""


MAX_ANSWER_BYTES = 4 * 1024 * 1024


async def _read(response: aiohttp.ClientResponse, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(65536):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise SearchError(f"the answer is larger than {limit} bytes")
    return b"".join(chunks)


class SearchError(Exception):
    """The engine could not answer (unreachable, an error status, a body that is not its JSON)."""


@dataclass(frozen=True, slots=True)
class EngineConfig:
    name: str  # searxng | brave | tavily
    url: str
    api_key: str = ""
    price_per_query: Decimal = Decimal(0)  # USD added to the request's cost per query
    timeout: float = 10.0


class SearchEngine:
    """Base of the adapters: `search` sends `request()` (a GET, or a POST of `json_body()` when `method` is
    POST) and parses the JSON with `parse()`."""

    method = "GET"

    def __init__(self, config: EngineConfig) -> None:
        self.config = config

    @property
    def name(self) -> str:
        return self.config.name

    def request(self, query: str, max_results: int) -> tuple[str, dict[str, str], dict[str, str]]:
        """(url, query parameters, headers) of the engine's search call."""
        raise NotImplementedError

    def json_body(self, query: str, max_results: int) -> dict[str, object] | None:
        """The JSON body of a POST search call (engines whose `method` is POST)."""
        return None

    def parse(self, data: object) -> list[SearchResult]:
        raise NotImplementedError

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        url, params, headers = self.request(query, max_results)
        timeout = aiohttp.ClientTimeout(total=self.config.timeout)
        try:
            body = self.json_body(query, max_results)
            target = URL(url)
            headers, proxy, proxy_headers = upstream.proxy_for_url(target, headers)  # the egress proxy, if any
            call = upstream.get_session().request(
                self.method,
                target,
                params=params,
                headers=headers,
                json=body,
                timeout=timeout,
                proxy=proxy,
                proxy_headers=proxy_headers,
            )
            async with call as response:
                body = await _read(response, MAX_ANSWER_BYTES)
                if response.status != 200:
                    raise SearchError(f"{self.name} answered HTTP {response.status}")
        except (aiohttp.ClientError, TimeoutError, ValueError) as error:
            raise SearchError(f"{self.name} is unreachable ({type(error).__name__})") from None
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise SearchError(f"{self.name} answered with something that is not JSON") from None
        results = [r for r in self.parse(data) if r.url.startswith(("http://", "https://"))]
        return results[:max_results]
