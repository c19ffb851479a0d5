"""The reasoning items of the Responses stream writer (inference/stream_reasoning.py), event by event: Anthropic's
thinking blocks each their own item (a signature ends one), a redacted block an item with only its encrypted
content, a Responses provider's own item passed on with its id."""

from __future__ import annotations

from inference.providers.base import OutputItemDone, ReasoningDelta, RedactedReasoning
from inference.stream_reasoning import ReasoningItems


class Writer(ReasoningItems):
    def __init__(self) -> None:
        self.items: list[dict] = []
        self.events: list[tuple[str, dict]] = []
        self.message_id = None

    def emit(self, kind: str, payload: dict) -> None:
        self.events.append((kind, payload))

    def _close_message(self, status: str = "completed") -> None:
        self.message_id = None


def test_each_signed_thinking_block_is_its_own_item():
    writer = Writer()
    for event in (
        ReasoningDelta("First "),
        ReasoningDelta("thought."),
        ReasoningDelta("", "sig-1"),
        ReasoningDelta("Second."),
        ReasoningDelta("", "sig-2"),
        RedactedReasoning("opaque"),
    ):
        writer._redacted(event) if isinstance(event, RedactedReasoning) else writer._reasoning_delta(event)
    writer._close_reasoning()
    assert [(i["content"][0]["text"] if "content" in i else None, i["encrypted_content"]) for i in writer.items] == [
        ("First thought.", "sig-1"),
        ("Second.", "sig-2"),
        (None, "opaque"),
    ]
    assert writer.items[2]["redacted"] is True
    done = [p["item"] for kind, p in writer.events if kind == "response.output_item.done"]
    assert done == writer.items
    kinds = [kind for kind, _ in writer.events]
    assert kinds.count("response.output_item.added") == 3 and kinds.count("response.reasoning_text.done") == 2


def test_a_responses_providers_item_is_passed_on_with_its_id():
    writer = Writer()
    writer._reasoning_delta(ReasoningDelta("Plan.", summary=True, item_id="rs_up_1"))
    upstream = {"type": "reasoning", "id": "rs_up_1", "summary": [{"type": "summary_text", "text": "Plan."}]}
    writer._output_item(OutputItemDone(upstream | {"encrypted_content": "enc"}))
    assert writer.items == [upstream | {"encrypted_content": "enc"}]
    added = writer.events[0][1]["item"]
    assert added == {"type": "reasoning", "id": "rs_up_1", "summary": []}
    kinds = [kind for kind, _ in writer.events]
    assert kinds[1:4] == [
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
    ]
