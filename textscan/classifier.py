"""Classification of a prompt (`textscan.texts.prompt_text` of a request body): a category (12 values) and a
language type (natural or programming), for the sampled rankings dataset (rankings/) and the auto-router's
quality scores (inference/routers/).

A transparent keyword model: each category has weighted keywords and phrases, matched on word
boundaries in the lower-cased prompt; the category with the highest score wins, ties broken by the order
of CATEGORIES, and a prompt with no keyword falls back to `trivia` for questions and `technology`
otherwise. Source code is detected by syntax cues (fences, keywords followed by code punctuation,
statement endings, brackets); a prompt with source code in it has the language type `programming`, any
other (including a question about programming asked in prose) is `natural`.
Accuracy on the labelled set tests/rankings/classifier_corpus.tsv is reported in docs/rankings.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CATEGORIES = (
    "programming",
    "roleplay",
    "marketing/seo",
    "marketing",
    "translation",
    "legal",
    "finance",
    "health",
    "science",
    "academia",
    "technology",
    "trivia",
)
LANGUAGE_TYPES = ("natural", "programming")

KEYWORDS: dict[str, dict[str, float]] = {
    "programming": {
        "code": 2,
        "function": 2,
        "bug": 2,
        "debug": 3,
        "compile": 3,
        "compiler": 3,
        "python": 3,
        "javascript": 3,
        "typescript": 3,
        "java": 2,
        "rust": 2,
        "golang": 3,
        "c++": 3,
        "sql": 3,
        "regex": 3,
        "api": 1,
        "class": 1,
        "variable": 2,
        "exception": 2,
        "stack trace": 3,
        "refactor": 3,
        "unit test": 3,
        "algorithm": 2,
        "git": 2,
        "docker": 2,
        "kubernetes": 2,
        "script": 2,
        "react": 2,
        "django": 3,
        "npm": 3,
        "json": 1,
        "error": 1,
        "loop": 1,
        "array": 2,
        "method": 1,
        "syntax": 2,
        "implement": 2,
        "program": 1,
    },
    "roleplay": {
        "roleplay": 4,
        "role-play": 4,
        "pretend": 3,
        "you are a": 2,
        "act as": 3,
        "character": 2,
        "in character": 4,
        "stay in character": 4,
        "*smiles*": 4,
        "tavern": 2,
        "dragon": 2,
        "quest": 2,
        "story": 1,
        "my character": 4,
        "your character": 4,
        "adventure": 2,
        "fantasy": 2,
        "rpg": 3,
        "narrate": 2,
        "scene": 1,
        "wizard": 2,
        "knight": 2,
    },
    "marketing/seo": {
        "seo": 5,
        "keywords": 2,
        "meta description": 5,
        "backlink": 5,
        "backlinks": 5,
        "search ranking": 5,
        "serp": 5,
        "organic traffic": 5,
        "title tag": 5,
        "keyword research": 5,
        "search engine": 3,
        "rank on google": 5,
        "long-tail": 4,
    },
    "marketing": {
        "marketing": 4,
        "campaign": 3,
        "brand": 3,
        "slogan": 4,
        "tagline": 4,
        "ad copy": 4,
        "advert": 3,
        "advertisement": 3,
        "audience": 2,
        "customers": 1,
        "product launch": 4,
        "newsletter": 3,
        "social media": 3,
        "instagram": 3,
        "conversion": 2,
        "landing page": 3,
        "email blast": 4,
        "promo": 3,
        "press release": 3,
        "go-to-market": 4,
    },
    "translation": {
        "translate": 5,
        "translation": 5,
        "into french": 4,
        "into spanish": 4,
        "into german": 4,
        "into english": 4,
        "into japanese": 4,
        "into chinese": 4,
        "in french": 2,
        "in spanish": 2,
        "localize": 3,
        "what does": 1,
        "mean in": 3,
    },
    "legal": {
        "contract": 3,
        "lawsuit": 4,
        "legal": 4,
        "law": 2,
        "attorney": 4,
        "lawyer": 4,
        "clause": 3,
        "liability": 3,
        "gdpr": 3,
        "copyright": 3,
        "trademark": 3,
        "court": 3,
        "sue": 3,
        "tenant": 2,
        "landlord": 2,
        "terms of service": 3,
        "nda": 4,
        "statute": 4,
        "plaintiff": 4,
        "defendant": 4,
        "compliance": 2,
    },
    "finance": {
        "stock": 3,
        "stocks": 3,
        "invest": 3,
        "investment": 3,
        "portfolio": 3,
        "dividend": 4,
        "interest rate": 3,
        "mortgage": 4,
        "loan": 3,
        "budget": 2,
        "tax": 3,
        "taxes": 3,
        "revenue": 2,
        "profit": 2,
        "crypto": 3,
        "bitcoin": 3,
        "inflation": 3,
        "retirement": 3,
        "401k": 4,
        "etf": 4,
        "bond": 2,
        "accounting": 3,
        "cash flow": 4,
        "balance sheet": 4,
        "valuation": 3,
    },
    "health": {
        "symptom": 4,
        "symptoms": 4,
        "doctor": 3,
        "medicine": 3,
        "medication": 4,
        "disease": 3,
        "pain": 2,
        "diet": 3,
        "exercise": 2,
        "sleep": 2,
        "headache": 4,
        "fever": 4,
        "diabetes": 4,
        "blood pressure": 4,
        "vitamin": 3,
        "therapy": 2,
        "anxiety": 3,
        "mental health": 4,
        "calories": 3,
        "pregnant": 3,
        "allergy": 3,
        "dose": 3,
        "workout": 3,
    },
    "science": {
        "physics": 4,
        "chemistry": 4,
        "biology": 4,
        "quantum": 3,
        "molecule": 3,
        "atom": 3,
        "cell": 2,
        "evolution": 3,
        "experiment": 2,
        "hypothesis": 3,
        "gravity": 3,
        "photosynthesis": 4,
        "dna": 3,
        "energy": 1,
        "planet": 2,
        "astronomy": 4,
        "climate": 2,
        "reaction": 2,
        "electron": 3,
        "species": 2,
    },
    "academia": {
        "essay": 3,
        "thesis": 4,
        "dissertation": 4,
        "research paper": 4,
        "literature review": 5,
        "citation": 3,
        "cite": 3,
        "apa": 3,
        "mla": 3,
        "professor": 3,
        "homework": 3,
        "assignment": 2,
        "abstract": 2,
        "peer review": 4,
        "university": 2,
        "journal": 2,
        "academic": 4,
        "exam": 2,
        "lecture": 3,
    },
    "technology": {
        "laptop": 3,
        "smartphone": 3,
        "iphone": 3,
        "android": 3,
        "wifi": 3,
        "router": 3,
        "windows": 2,
        "macos": 3,
        "linux": 2,
        "software": 2,
        "hardware": 3,
        "cpu": 3,
        "gpu": 3,
        "cloud": 2,
        "ai": 2,
        "artificial intelligence": 3,
        "machine learning": 3,
        "gadget": 3,
        "battery": 2,
        "install": 1,
        "update": 1,
        "printer": 3,
        "bluetooth": 3,
        "internet": 2,
        "computer": 2,
        "tech": 2,
        "5g": 3,
    },
    "trivia": {
        "who was": 3,
        "who is": 2,
        "when did": 3,
        "what year": 3,
        "capital of": 4,
        "how many": 2,
        "fun fact": 4,
        "trivia": 5,
        "largest": 2,
        "tallest": 3,
        "first person": 3,
        "world record": 3,
        "famous": 2,
        "history": 1,
        "quiz": 3,
        "oldest": 2,
    },
}

CODE_PATTERNS = [
    re.compile(r"```"),
    re.compile(r"^\s*(def|class|import|from|return|if|for|while|elif|async def)\b.*[:(]", re.M),
    re.compile(r"\b(function|const|let|var)\s+\w+\s*(=|\()"),
    re.compile(r"#include\s*<"),
    re.compile(r"\b(public|private|static)\s+(void|int|class|string)\b", re.I),
    re.compile(r"\bSELECT\b.+\bFROM\b", re.I | re.S),
    re.compile(r"[;{}]\s*$", re.M),
    re.compile(r"=>|->|::|\+=|==|!="),
    re.compile(r"\w+\([^()]*\)\s*[{;:]"),
    re.compile(r"</?[a-z]+[^>]*>"),
]

_COMPILED: dict[str, list[tuple[re.Pattern[str], float]]] = {
    category: [
        (re.compile(r"(?<![\w+])" + re.escape(word) + r"(?:s|es)?(?![\w+])"), weight) for word, weight in words.items()
    ]
    for category, words in KEYWORDS.items()
}


@dataclass(frozen=True)
class Classification:
    category: str
    language_type: str


def code_score(text: str) -> int:
    """How many distinct code cues the text shows."""
    return sum(1 for pattern in CODE_PATTERNS if pattern.search(text))


def category_scores(text: str) -> dict[str, float]:
    lowered = text.lower()
    return {
        category: sum(weight for pattern, weight in patterns if pattern.search(lowered))
        for category, patterns in _COMPILED.items()
    }


def classify(text: str) -> Classification:
    """The category and language type of a prompt."""
    scores = category_scores(text)
    cues = code_score(text)
    if cues >= 2:
        scores["programming"] += 3 * cues
    best = max(CATEGORIES, key=lambda c: (scores[c], -CATEGORIES.index(c)))
    if scores[best] == 0:
        best = "trivia" if text.strip().endswith("?") else "technology"
    language_type = "programming" if cues >= 2 else "natural"
    return Classification(category=best, language_type=language_type)
