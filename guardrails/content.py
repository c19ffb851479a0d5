"""Content filters over a Responses request: `instructions` and every input message, tool call (its arguments)
and tool output, whatever wire format the request came in (ingress adapters translate into this body).

`scan(body, policy)` runs every filter of every applying guardrail once per text, and returns what it found
per guardrail; `redact(body, ...)` rewrites the body in place so the provider receives the labels instead of
the matches. Each built-in detector runs at most once per text even when several guardrails use it.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field

from guardrails.policy import ACTION_RANK, ContentFilter, EffectivePolicy, GuardrailRule
from textscan.texts import TextSlot, request_texts


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
