"""Tavily Search API (commercial, made for LLM agents): `POST https://api.tavily.com/search` with the key as
`Authorization: Bearer tvly-...` and the JSON body `{"query", "max_results" (at most 20), "search_depth":
"basic", "topic": "general"}`. Answer: `{"query", "results": [{"title", "url", "content", "score",
"published_date"?}], "response_time", ...}`; `content` is the extract of the page that matches the query.
"""

from __future__ import annotations

from typing import Any

from inference.search.base import SearchEngine, SearchError, SearchResult

DEFAULT_URL = "https://api.tavily.com/search"
MAX_RESULTS = 20


class TavilyEngine(SearchEngine):
    method = "POST"

    def request(self, query: str, max_results: int) -> tuple[str, dict[str, str], dict[str, str]]:
        headers = {"Accept": "application/json", "Authorization": f"Bearer {self.config.api_key}"}
        return self.config.url or DEFAULT_URL, {}, headers

    def json_body(self, query: str, max_results: int) -> dict[str, Any]:
        return {
            "query": query,
            "max_results": min(max_results, MAX_RESULTS),
            "search_depth": "basic",
            "topic": "general",
        }

    def parse(self, data: object) -> list[SearchResult]:
        if not isinstance(data, dict):
            raise SearchError("tavily answered with something that is not a JSON object")
        items = data.get("results")
        if not isinstance(items, list):
            return []
        return [
            SearchResult(
                title=str(item.get("title") or item.get("url") or ""),
                url=str(item.get("url") or ""),
                snippet=str(item.get("content") or ""),
                published=str(item.get("published_date") or ""),
            )
            for item in items
            if isinstance(item, dict)
        ]
