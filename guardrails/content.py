"""Content filters over a Responses request: `instructions` and every input message, tool call (its arguments)
and tool output, whatever wire format the request came in (ingress adapters translate into this body).

`scan(body, policy)` runs every filter of every applying guardrail once per text, and returns what it found
per guardrail; `redact(body, ...)` rewrites the body in place so the provider receives the labels instead of
the matches. Each built-in detector runs at most once per text even when several guardrails use it.
"""

from __future__ import annotations

import base64
import hashlib
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any

from guardrails.policy import ACTION_RANK, ContentFilter, EffectivePolicy, GuardrailRule


@dataclass(slots=True)
class TextSlot:
    """One text of the request: where it lives in the body (container + key) and whose it is."""

    container: Any
    key: Any
    role: str

    @property
    def text(self) -> str:
        return self.container[self.key]

    def write(self, text: str) -> None:
        self.container[self.key] = text


TEXT_MEDIA_TYPES = ("text/", "application/json", "application/xml", "application/x-ndjson")


@dataclass(slots=True)
class FileSlot(TextSlot):
    """The text of a file sent inline as a `data:<text type>;base64,...` URL: read decoded, written re-encoded."""

    prefix: str = ""

    @property
    def text(self) -> str:
        return base64.b64decode(self.container[self.key][len(self.prefix) :]).decode("utf-8")

    def write(self, text: str) -> None:
        self.container[self.key] = self.prefix + base64.b64encode(text.encode("utf-8")).decode("ascii")


def file_slot(part: dict, role: str) -> FileSlot | None:
    """The slot of an `input_file` part whose inline data is text, or None when it is not readable as text."""
    data = part.get("file_data")
    if not isinstance(data, str) or not data.startswith("data:") or ";base64," not in data:
        return None
    prefix = data[: data.index(";base64,") + 8]
    if not prefix[5:].lower().startswith(TEXT_MEDIA_TYPES):
        return None
    slot = FileSlot(part, "file_data", role, prefix)
    try:
        slot.text  # noqa: B018  (decodes: base64 and UTF-8 must both hold)
    except (ValueError, UnicodeDecodeError):
        return None
    return slot


def opaque_files(body: dict) -> list[str]:
    """The `input_file` parts content filters cannot read (a PDF, a file by id or URL): their names."""
    names = []
    for item in body.get("input") if isinstance(body.get("input"), list) else ():
        parts = item.get("content") if isinstance(item, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict) and part.get("type") == "input_file" and file_slot(part, "user") is None:
                names.append(str(part.get("filename") or part.get("file_id") or part.get("file_url") or "file"))
    return names


@dataclass(slots=True)
class Hit:
    rule: GuardrailRule
    filter: ContentFilter
    slot: TextSlot
    spans: list[tuple[int, int]]


@dataclass(slots=True)
class RuleResult:
    """What one guardrail's filters found."""

    rule: GuardrailRule
    hits: list[Hit] = field(default_factory=list)

    @property
    def action(self) -> str:
        if not self.hits:
            return "none"
        return max((h.filter.action for h in self.hits), key=ACTION_RANK.__getitem__)

    def patterns(self, action: str | None = None) -> list[str]:
        """The labels of the filters that matched (never the regular expressions, which may be confidential)."""
        seen: dict[str, None] = {}
        for hit in self.hits:
            if action is None or hit.filter.action == action:
                seen[hit.filter.label] = None
        return list(seen)


def _item_texts(item: dict, role: str) -> Iterator[TextSlot]:
    content = item.get("content")
    if isinstance(content, str):
        yield TextSlot(item, "content", role)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield TextSlot(part, "text", role)
            elif isinstance(part, dict) and part.get("type") == "input_file" and (slot := file_slot(part, role)):
                yield slot
    for summary in item.get("summary") or () if item.get("type") == "reasoning" else ():
        if isinstance(summary, dict) and isinstance(summary.get("text"), str):
            yield TextSlot(summary, "text", "assistant")  # reasoning summaries sent back as input
    output = item.get("output")
    if isinstance(output, str):  # function_call_output items carry tool results as `output`
        yield TextSlot(item, "output", "tool")
    elif isinstance(output, list):
        for part in output:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield TextSlot(part, "text", "tool")
    if item.get("type") == "function_call" and isinstance(item.get("arguments"), str):
        yield TextSlot(item, "arguments", "assistant")  # the arguments of a tool call the model made earlier


def _schema_descriptions(schema: Any, depth: int = 0) -> Iterator[TextSlot]:
    """`description` strings anywhere in a JSON schema (a tool's parameters): the model reads them too."""
    if depth > 64:
        return
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("description", "title") and isinstance(value, str):
                yield TextSlot(schema, key, "system")
            else:
                yield from _schema_descriptions(value, depth + 1)
    elif isinstance(schema, list):
        for value in schema:
            yield from _schema_descriptions(value, depth + 1)


def _tool_texts(body: dict) -> Iterator[TextSlot]:
    for tool in body.get("tools") or ():
        if isinstance(tool, dict):
            if isinstance(tool.get("description"), str):
                yield TextSlot(tool, "description", "system")
            yield from _schema_descriptions(tool.get("parameters"))


def _prompt_texts(body: dict) -> Iterator[TextSlot]:
    variables = (body.get("prompt") or {}).get("variables") if isinstance(body.get("prompt"), dict) else None
    for name, value in (variables or {}).items() if isinstance(variables, dict) else ():
        if isinstance(value, str):
            yield TextSlot(variables, name, "user")
        elif isinstance(value, dict):
            yield from _item_texts({"content": [value]}, "user")


def request_texts(body: dict) -> list[TextSlot]:
    """Every text of the request that content filters apply to (docs/guardrails.md lists them)."""
    slots: list[TextSlot] = []
    if isinstance(body.get("instructions"), str):
        slots.append(TextSlot(body, "instructions", "system"))
    slots.extend(_tool_texts(body))
    slots.extend(_prompt_texts(body))
    data = body.get("input")
    if isinstance(data, str):
        slots.append(TextSlot(body, "input", "user"))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            if isinstance(item, dict):
                slots.extend(_item_texts(item, str(item.get("role") or "user")))
            elif isinstance(item, str):  # an /embeddings input array of strings
                slots.append(TextSlot(data, index, "user"))
    return slots


def has_token_input(body: dict) -> bool:
    """Whether `input` holds token ids (an /embeddings input), which content filters cannot read."""
    data = body.get("input")
    return isinstance(data, list) and bool(data) and isinstance(data[0], (int, list))


class TextCache:
    """What each filter found in recently scanned texts, kept per scope (the organization), so the messages a
    chat client resends with every turn are not scanned again. The filters are pure functions of the text
    (a custom filter is keyed by its expression), so a cached result is what a new scan would find. A text is
    known by its length and a 128-bit BLAKE2b digest, not kept itself (no prompt outlives its request here).
    Kept per organization because a shared cache would let one tenant time whether another recently sent a
    text. Only texts of `min_chars` or more (shorter ones cost a few µs to scan); at most `max_entries` texts,
    least recently used first out."""

    def __init__(self, max_entries: int = 10_000, min_chars: int = 256):
        self.max_entries, self.min_chars = max_entries, min_chars
        self._entries: OrderedDict[tuple[Hashable, int, bytes], dict[tuple[str, str], tuple]] = OrderedDict()

    def entry(self, scope: Hashable, text: str) -> dict[tuple[str, str], tuple] | None:
        """The results kept for `text` in `scope`, keyed by (engine, pattern); None when the text is too short."""
        if len(text) < self.min_chars:
            return None
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        key = (scope, len(text), digest)
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            return found
        found = self._entries[key] = {}
        if len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return found

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def scan(
    body: dict, policy: EffectivePolicy, cache: TextCache | None = None, scope: Hashable = None
) -> list[RuleResult]:
    """Run every guardrail's content filters on every text of the request (with `cache`, reusing what they found
    in the same texts of earlier requests of `scope`)."""
    slots = request_texts(body)
    texts = [slot.text for slot in slots]
    kept = [cache.entry(scope, text) for text in texts] if cache is not None else [None] * len(texts)
    results: list[RuleResult] = []
    memo: dict[tuple[str, int], list[tuple[int, int]]] = {}
    screened: dict[tuple[int, int], frozenset[int]] = {}
    for rule in policy.rules:
        if not rule.filters:
            continue
        result = RuleResult(rule)
        for content_filter in rule.filters:
            find, screen, pattern = content_filter.find, content_filter.screen, content_filter.pattern
            for index, text in enumerate(texts):
                if content_filter.user_only and slots[index].role != "user":
                    continue
                if screen is not None:
                    matching = screened.get((id(screen), index))
                    if matching is None:
                        matching = screened[(id(screen), index)] = frozenset(screen.Match(text) or ())
                    if content_filter.screen_index not in matching:
                        continue
                spans = memo.get((pattern, index))
                if spans is None:
                    entry = kept[index]
                    found = entry.get((content_filter.engine, pattern)) if entry is not None else None
                    if found is not None:
                        spans = list(found)
                    else:
                        spans = find(text)
                        if entry is not None:
                            entry[(content_filter.engine, pattern)] = tuple(spans)
                    memo[(pattern, index)] = spans
                if spans:
                    result.hits.append(Hit(rule, content_filter, slots[index], spans))
        results.append(result)
    return results


def redact(results: list[RuleResult]) -> int:
    """Replace every redact-action match by its label, in place. Returns how many matches were replaced."""
    per_slot: dict[int, tuple[TextSlot, list[tuple[int, int, str]]]] = {}  # keyed by id(slot)
    for result in results:
        for hit in result.hits:
            if hit.filter.action != "redact":
                continue
            entry = per_slot.setdefault(id(hit.slot), (hit.slot, []))
            entry[1].extend((start, end, hit.filter.label) for start, end in hit.spans)
    replaced = 0
    for slot, spans in per_slot.values():
        text = slot.text
        pieces: list[str] = []
        cursor = 0
        # Earliest first; of overlapping matches the longer one wins.
        for start, end, label in sorted(spans, key=lambda s: (s[0], -(s[1] - s[0]))):
            if start < cursor:
                continue
            pieces.append(text[cursor:start])
            pieces.append(label)
            cursor = end
            replaced += 1
        pieces.append(text[cursor:])
        slot.write("".join(pieces))
    return replaced
