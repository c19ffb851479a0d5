"""The Responses SSE writer of a server-tool loop: the stock writer plus server-tool items and citations.

Text and client function calls of every turn stream as usual. A server-tool call appears as its own output
item (`type` = the server tool's kind, e.g. `service:web_search`): `response.output_item.added` with status
`in_progress` when the call starts, `response.output_item.done` with its result when it finished, each
written at once. A message whose text cites the sources found gets `response.output_text.annotation.added`
events and the annotations on its `done` events. The final `response.completed` carries the summed usage and
cost of all turns.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from inference.pipeline.context import Usage
from inference.providers.base import CanonicalResult
from inference.servertools.citations import annotate
from inference.streaming import ResponseStream


class LoopStream(ResponseStream):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sources: dict[str, str] = {}

    async def add_items(self, items: list[dict[str, Any]]) -> list[int]:
        """Server-tool items starting (status in_progress): `output_item.added` each, written at once."""
        self._close_message()
        indexes = []
        for item in items:
            indexes.append(len(self.items))
            self.items.append(item)
            self.emit("response.output_item.added", {"output_index": indexes[-1], "item": item})
        await self.flush()
        return indexes

    async def done_item(self, index: int, item: dict[str, Any]) -> None:
        self.items[index] = item
        self.emit("response.output_item.done", {"output_index": index, "item": item})
        await self.flush()

    def _annotations(self, text: str) -> list[dict[str, Any]]:
        return annotate(text, self.sources)

    async def finish(self, last: CanonicalResult, usage: Usage, cost: Decimal) -> None:
        """`response.completed` (or `.incomplete`) with the totals of every turn, then [DONE]."""
        totals = Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_tokens=usage.cached_tokens,
            reasoning_tokens=usage.reasoning_tokens,
            cost=cost,
        )
        result = CanonicalResult(
            upstream_id=last.upstream_id,
            output=[],
            usage=totals,
            status=last.status,
            incomplete_reason=last.incomplete_reason,
            finish_reason=last.finish_reason,
        )
        await self._complete(result)
