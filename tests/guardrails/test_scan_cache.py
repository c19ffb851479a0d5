"""guardrails.content.TextCache: the content filters' results of resent texts, per organization, bounded."""

from __future__ import annotations

from guardrails import content
from guardrails.management.commands.bench_guardrails import LONG_MESSAGE, full_policy
from guardrails.policy import ContentFilter


def _counting_policy(calls: list[str]):
    """full_policy() whose e-mail filter records each text it runs on."""
    policy = full_policy()
    rule = policy.rules[0]

    inner = next(f.find for f in rule.filters if f.engine == "email")

    def find(text):
        calls.append(text)
        return inner(text)

    filters = tuple(
        ContentFilter(f.engine, f.pattern, f.action, f.label, f.user_only, find, f.screen, f.screen_index)
        if f.engine == "email"
        else f
        for f in rule.filters
    )
    rule = type(rule)(**{name: getattr(rule, name) for name in rule.__slots__} | {"filters": filters})
    return type(policy)(**{name: getattr(policy, name) for name in policy.__slots__} | {"rules": (rule,)})


def _body(*texts: str) -> dict:
    return {"model": "m", "input": [{"role": "user", "content": t} for t in texts]}


def test_a_resent_long_text_is_scanned_once_per_organization():
    calls: list[str] = []
    policy, cache = _counting_policy(calls), content.TextCache()
    first = content.scan(_body(LONG_MESSAGE), policy, cache, "org-a")
    again = content.scan(_body(LONG_MESSAGE, "Say hello"), policy, cache, "org-a")
    assert calls == [LONG_MESSAGE, "Say hello"]  # the short text is not kept, the long one answered from the cache
    assert [h.spans for h in first[0].hits] == [h.spans for h in again[0].hits if h.slot.text == LONG_MESSAGE]
    content.scan(_body(LONG_MESSAGE), policy, cache, "org-b")
    assert calls == [LONG_MESSAGE, "Say hello", LONG_MESSAGE]  # another organization scans for itself


def test_a_cached_result_is_not_shared_by_the_spans_of_a_request():
    policy, cache = full_policy(), content.TextCache()
    results = content.scan(_body(LONG_MESSAGE), policy, cache, "org")
    next(h for h in results[0].hits if h.filter.engine == "email").spans.append((0, 1))
    again = content.scan(_body(LONG_MESSAGE), policy, cache, "org")
    assert (0, 1) not in next(h for h in again[0].hits if h.filter.engine == "email").spans


def test_the_cache_keeps_at_most_max_entries_least_recently_used_first_out():
    cache = content.TextCache(max_entries=3, min_chars=10)
    texts = [f"{i:03d}" + "x" * 297 for i in range(5)]
    for text in texts:
        cache.entry("org", text)["k"] = ()
    assert len(cache) == 3
    assert cache.entry("org", texts[0]) == {}  # evicted: a new, empty entry (which evicts texts[2])
    assert cache.entry("org", texts[4]) == {"k": ()}
    assert cache.entry("org", texts[3]) == {"k": ()}
    assert cache.entry("org", texts[2]) == {}
    assert cache.entry("org", "short") is None
    assert len(cache) == 3


def test_the_cache_does_not_keep_the_texts():
    cache = content.TextCache(min_chars=10)
    secret = "my card is 4111 1111 1111 1111 " + "x" * 20 + " \ud800"  # a lone surrogate hashes too
    cache.entry("org", secret)
    assert not any(isinstance(part, str) for key in cache._entries for part in key[1:])
