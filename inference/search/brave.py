"""Brave Search API (commercial): `GET https://api.search.brave.com/res/v1/web/search?q=...&count=N` with the
subscription key in `X-Subscription-Token`. Answer: `{"web": {"results": [{"title", "url", "description",
"age"?, ...}]}, ...}`; `count` is at most 20.
"""

from __future__ import annotations

import html
import re

from inference.search.base import SearchEngine, SearchError, SearchResult

DEFAULT_URL = "https://api.search.brave.com/res/v1/web/search"
MAX_COUNT = 20
_TAG = re.compile(r"<[^>]+>")


def _plain(value: object) -> str:
    """Brave marks the query's words in snippets with <strong>: plain text for the model."""
    return html.unescape(_TAG.sub("", str(value or "")))


class BraveEngine(SearchEngine):
    def request(self, query: str, max_results: int) -> tuple[str, dict[str, str], dict[str, str]]:
        params = {"q": query, "count": str(min(max_results, MAX_COUNT))}
        headers = {"Accept": "application/json", "X-Subscription-Token": self.config.api_key}
        return self.config.url or DEFAULT_URL, params, headers

    def parse(self, data: object) -> list[SearchResult]:
        if not isinstance(data, dict):
            raise SearchError("brave answered with something that is not a JSON object")
        web = data.get("web") or {}
        items = web.get("results") if isinstance(web, dict) else None
        if not isinstance(items, list):
            return []  # no web results for the query
        return [
            SearchResult(
                title=_plain(item.get("title") or item.get("url")),
                url=str(item.get("url") or ""),
                snippet=_plain(item.get("description")),
                published=str(item.get("age") or item.get("page_age") or ""),
            )
            for item in items
            if isinstance(item, dict)
        ]
