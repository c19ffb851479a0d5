"""SearXNG (self-hosted metasearch): `GET <url>/search?q=...&format=json`.

The instance must allow the JSON format (`search.formats` in its settings.yml lists `json`). Answer:
`{"query": ..., "results": [{"url", "title", "content", "publishedDate"?, "engine", ...}], ...}`. SearXNG has
no result count parameter: the first `max_results` results of page 1 are kept.
"""

from __future__ import annotations

from inference.search.base import SearchEngine, SearchError, SearchResult


class SearxngEngine(SearchEngine):
    def request(self, query: str, max_results: int) -> tuple[str, dict[str, str], dict[str, str]]:
        params = {"q": query, "format": "json", "pageno": "1"}
        headers = {"Accept": "application/json"}
        if self.config.api_key:  # an instance behind a proxy that wants a bearer token
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        return self.config.url.rstrip("/") + "/search", params, headers

    def parse(self, data: object) -> list[SearchResult]:
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            raise SearchError("searxng answered without a results list (is the JSON format enabled?)")
        return [
            SearchResult(
                title=str(item.get("title") or item.get("url")),
                url=str(item.get("url") or ""),
                snippet=str(item.get("content") or ""),
                published=str(item.get("publishedDate") or ""),
            )
            for item in data["results"]
            if isinstance(item, dict)
        ]
