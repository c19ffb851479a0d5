"""A small BM25 index over function tools: their names, descriptions and parameter names.

Tokens: lower-case words split on anything that is not a letter or digit and on camelCase humps, a plural
`s` dropped. A tool's document is its name (counted twice: names are short and telling), its description,
and the names and descriptions of its parameters (nested objects included). Scores are Okapi BM25 (k1 1.2,
b 0.75); ties keep the request's order.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_WORD = re.compile(r"[a-z0-9]+")
K1 = 1.2
B = 0.75


def tokens(text: str) -> list[str]:
    words = _WORD.findall(_CAMEL.sub(r"\1 \2", text).lower())
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]


def _parameter_text(schema: Any, depth: int = 0) -> list[str]:
    if not isinstance(schema, dict) or depth > 8:
        return []
    parts: list[str] = []
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            parts.append(str(name))
            if isinstance(sub, dict) and isinstance(sub.get("description"), str):
                parts.append(sub["description"])
            parts.extend(_parameter_text(sub, depth + 1))
    items = schema.get("items")
    if isinstance(items, dict):
        parts.extend(_parameter_text(items, depth + 1))
    return parts


def tool_document(tool: dict[str, Any]) -> list[str]:
    name = str(tool.get("name", ""))
    text = [name, name, str(tool.get("description") or ""), *_parameter_text(tool.get("parameters"))]
    return tokens(" ".join(text))


class ToolIndex:
    """BM25 over a list of function tools."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.tools = tools
        self.docs = [Counter(tool_document(tool)) for tool in tools]
        self.lengths = [sum(doc.values()) for doc in self.docs]
        self.average = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0
        frequency: Counter[str] = Counter()
        for doc in self.docs:
            frequency.update(doc.keys())
        n = len(self.docs)
        self.idf = {term: math.log(1 + (n - df + 0.5) / (df + 0.5)) for term, df in frequency.items()}

    def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        """The best `limit` tools for `query` (only tools sharing at least one term with it)."""
        terms = [t for t in dict.fromkeys(tokens(query)) if t in self.idf]
        scored = []
        for position, (doc, length) in enumerate(zip(self.docs, self.lengths, strict=True)):
            score = 0.0
            for term in terms:
                tf = doc.get(term)
                if tf:
                    norm = tf + K1 * (1 - B + B * length / (self.average or 1))
                    score += self.idf[term] * tf * (K1 + 1) / norm
            if score > 0:
                scored.append((-score, position))
        scored.sort()
        return [self.tools[position] for _, position in scored[:limit]]
