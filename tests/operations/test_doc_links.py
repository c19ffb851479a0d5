"""Every relative link and file path in README.md and docs/*.md names a file of the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)[^)]*\)")
# `bench/run.sh`, `docs/performance.md`, `../x/y.py`: a path with a directory and a file extension
EXTENSIONS = "py|md|sh|yaml|yml|json|png|csv|tsv|txt"
PATH_IN_CODE = re.compile(rf"`(\.{{0,2}}/?[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\.(?:{EXTENSIONS}))`")


def _without_code_blocks(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.S)


def _targets(document: Path) -> list[str]:
    text = _without_code_blocks(document.read_text(encoding="utf-8"))
    prose = re.sub(r"`[^`\n]*`", "", text)  # a link written inside `code` is an example, not a link
    links = [url for url in LINK.findall(prose) if not re.match(r"^[a-z][a-z0-9+.-]*:|^#", url)]
    paths = [p for p in PATH_IN_CODE.findall(text) if not p.startswith("/")]  # "/api/v1/..." are URL paths
    return [target.split("#", 1)[0] for target in links + paths]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve_inside_the_repository(document):
    broken = []
    for target in _targets(document):
        candidates = [(document.parent / target).resolve(), (ROOT / target).resolve()]
        if not any(c.exists() and c.is_relative_to(ROOT) for c in candidates):
            broken.append(target)
    assert not broken, f"{document.relative_to(ROOT)} points at files not in the repository: {broken}"


def test_the_checker_finds_links_and_paths():
    readme = _targets(ROOT / "README.md")
    assert "docs/inference.md" in readme and "docs/security.md" in readme
    assert len(readme) > 20
