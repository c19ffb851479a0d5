"""Prompt-injection phrases: instructions that try to override, reveal or escape the system's instructions.

A curated list of regular expressions over normalized text (lower case, collapsed whitespace), in the
style of the phrase lists used by open-source guardrail projects; it catches the common English
phrasings, not paraphrases a classifier model would.
"""

from __future__ import annotations

import re
from functools import lru_cache

from textscan.detectors.textindex import SHORT_TEXT, WordSet, anchored_finditer, folded, occurrences

Span = tuple[int, int]

_PREVIOUS = r"(?:all\s+|any\s+|the\s+|your\s+|my\s+|these\s+|those\s+)*(?:previous|prior|above|earlier|preceding|former|original|initial|system|existing)?\s*"  # noqa: E501
_RULES = r"(?:instructions?|prompts?|rules|directions|guidelines|guardrails|constraints|context|messages?|commands?|programming|restrictions|policies|polic(?:y|ies))"  # noqa: E501

_PHRASES = [
    rf"\b(?:ignore|disregard|forget|skip|bypass|override|overrule|drop|abandon|discard)\s+(?:(?:all|any|every|everything)\s+(?:of\s+)?)?{_PREVIOUS}{_RULES}\b",
    r"\b(?:ignore|disregard|forget)\s+(?:everything|all|anything)\s+(?:(?:you\s+were|you've\s+been|you\s+have\s+been|i)\s+(?:told|said|given|instructed)|(?:said\s+)?(?:above|before|so\s+far))",
    r"\b(?:reveal|show|print|display|repeat|output|leak|tell\s+me|give\s+me|what\s+(?:is|are))\s+(?:me\s+)?(?:your|the)\s+(?:full\s+|exact\s+|original\s+|hidden\s+|secret\s+|initial\s+)*(?:system\s+prompt|system\s+message|instructions\s+(?:you\s+were\s+given|above)|hidden\s+instructions|initial\s+prompt|developer\s+message)",
    r"\byou\s+are\s+now\s+(?:dan|in\s+developer\s+mode|jailbroken|unrestricted|free\s+from|no\s+longer\s+bound|an?\s+(?:unfiltered|uncensored|unrestricted))",
    r"\b(?:enable|activate|enter|switch\s+to)\s+(?:developer|dev|god|jailbreak|dan|unrestricted|debug)\s+mode\b",
    r"\bdo\s+anything\s+now\b",
    r"\bjailbreak(?:ed|ing)?\b(?!\s+(?:detection|attempts?\s+(?:are|were)\s+blocked))",
    r"\b(?:pretend|act\s+as\s+if|imagine)\s+(?:that\s+)?you\s+(?:have|had|are\s+under)\s+no\s+(?:restrictions|rules|filters|guidelines|limitations|content\s+polic)",
    r"\b(?:without|with\s+no)\s+(?:any\s+)?(?:ethical|moral|safety|content)\s+(?:restrictions|guidelines|filters|limitations|constraints)\b",
    r"\bnew\s+(?:system\s+)?instructions?\s*:",
    r"\bfrom\s+now\s+on,?\s+you\s+(?:will|must|shall)\s+(?:ignore|disregard|not\s+follow|answer\s+without|respond\s+without)",
    r"\b(?:your|the)\s+(?:previous|prior|original)\s+instructions\s+(?:are|were)\s+(?:void|cancelled|canceled|revoked|no\s+longer\s+valid|obsolete)",
    r"<\s*/?\s*(?:system|im_start|im_end)\s*>|<\|im_(?:start|end)\|>(?:system)?|\[\s*/?\s*(?:inst|system)\s*\]",
]
_INJECTION = re.compile("|".join(f"(?:{p})" for p in _PHRASES), re.IGNORECASE)
_CUES = (
    "ignor", "disregard", "forget", "bypass", "overr", "reveal", "system", "prompt", "jailbreak", "mode",
    "anything now", "pretend", "act as", "imagine", "restriction", "instruction", "<", "[",
)  # fmt: skip

# Words each phrase cannot match without (one of each group must occur in the folded text), in _PHRASES order;
# the first group holds the words the phrase starts with. A phrase whose
# words are missing cannot match anywhere, and an alternation without the branches that cannot match finds
# exactly what the whole one finds; most texts leave no phrase, long ones one or two, and those are tried
# only where their first words occur.
_VERBS_OVERRIDE = ("ignore", "disregard", "forget", "skip", "bypass", "override", "overrule", "drop", "abandon",
                   "discard")  # fmt: skip
_RULE_WORDS = ("instruction", "prompt", "rules", "direction", "guideline", "guardrail", "constraint", "context",
               "message", "command", "programming", "restriction", "polic")  # fmt: skip
_REQUIRED: tuple[tuple[tuple[str, ...], ...], ...] = (
    (_VERBS_OVERRIDE, _RULE_WORDS),
    (("ignore", "disregard", "forget"), ("everything", "all", "anything")),
    (("reveal", "show", "print", "display", "repeat", "output", "leak", "tell", "give", "what"),
     ("prompt", "message", "instructions"), ("system", "instructions", "initial", "developer")),
    (("you",), ("now",), ("are",)),
    (("enable", "activate", "enter", "switch"), ("mode",)),
    (("do",), ("anything",), ("now",)),
    (("jailbreak",),),
    (("pretend", "act", "imagine"), ("no",), ("you",)),
    (("with",), ("restriction", "guideline", "filter", "limitation", "constraint")),
    (("new",), ("instruction",), (":",)),
    (("from",), ("now",), ("you",)),
    (("your", "the"), ("previous", "prior", "original"), ("instructions",)),
    (("<", "["), ("system", "im_", "inst")),
)  # fmt: skip


@lru_cache(maxsize=64)
def _phrases(indexes: tuple[int, ...]) -> re.Pattern:
    """The alternation of the phrases `indexes` (in their order), compiled once per combination."""
    return re.compile("|".join(f"(?:{_PHRASES[i]})" for i in indexes), re.IGNORECASE)


# Every cue and required word, looked up in one pass over the text.
_WORDS = WordSet((*_CUES, *(word for groups in _REQUIRED for group in groups for word in group)))


def find_prompt_injections(text: str) -> list[Span]:
    lower = text.lower()
    if len(text) < SHORT_TEXT and not any(cue in lower for cue in _CUES):
        return []  # most short texts: as cheap as before
    present = _WORDS(lower)
    if present.isdisjoint(_CUES):
        return []
    words = lower
    if not text.isascii():  # the folded text differs from the lower-cased one only outside ASCII
        words = folded(text)
        present = _WORDS(words)
    possible = tuple(
        index
        for index, (first, *rest) in enumerate(_REQUIRED)
        if all(not present.isdisjoint(group) for group in rest) and not present.isdisjoint(first)
    )
    if not possible:
        return []
    starts = occurrences(words, present.intersection(word for index in possible for word in _REQUIRED[index][0]))
    return [m.span() for m in anchored_finditer(_phrases(possible), text, starts)]
