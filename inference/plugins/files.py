"""The `input_file` parts of a conversation as the file-parser plugin sees them, and their text.

A part is read when its file is inline (`file_data`: a `data:<type>;base64,` URL): a PDF (`application/pdf`,
or a `.pdf` filename) is turned into text with pypdf, page by page, up to a page limit; a text type
(`text/*`, JSON, XML, NDJSON) is decoded as UTF-8. Anything else (a file by `file_id` or `file_url`, another
media type) is opaque: the gateway cannot turn it into text.
"""

from __future__ import annotations

import base64
import binascii
import io
from dataclasses import dataclass
from typing import Any

from textscan.texts import TEXT_MEDIA_TYPES


class FileError(Exception):
    """A file that claims to be readable but is not (a broken or encrypted PDF, text that is not UTF-8)."""


@dataclass(frozen=True, slots=True)
class FilePart:
    """One input_file part: where it is (a field name for errors) and what kind of file it holds."""

    part: dict[str, Any]
    field: str
    name: str
    kind: str  # "pdf" | "text" | "opaque"


@dataclass(frozen=True, slots=True)
class Parsed:
    text: str  # what the model is given instead of the file
    pages: int | None  # pages of the PDF (None: a text file)
    pages_parsed: int | None
    chars: int


def _media_type(data: str) -> str:
    return data[5 : data.index(";base64,")].lower() if ";base64," in data else ""


def classify(part: dict[str, Any], field: str) -> FilePart:
    data = part.get("file_data")
    name = str(part.get("filename") or part.get("file_id") or part.get("file_url") or "file")
    kind = "opaque"
    if isinstance(data, str) and data.startswith("data:") and ";base64," in data:
        media = _media_type(data)
        if media == "application/pdf" or (media in ("", "application/octet-stream") and name.lower().endswith(".pdf")):
            kind = "pdf"
        elif media.startswith(TEXT_MEDIA_TYPES):
            kind = "text"
    return FilePart(part, field, name, kind)


def file_parts(items: list[Any], prefix: str = "input") -> list[FilePart]:
    """The input_file parts of `items` (Responses input items), in order."""
    found = []
    for i, item in enumerate(items):
        content = item.get("content") if isinstance(item, dict) else None
        for j, part in enumerate(content if isinstance(content, list) else ()):
            if isinstance(part, dict) and part.get("type") == "input_file":
                found.append(classify(part, f"{prefix}[{i}].content[{j}]"))
    return found


def _payload(data: str) -> bytes:
    try:
        return base64.b64decode(data[data.index(";base64,") + 8 :], validate=True)
    except (binascii.Error, ValueError) as error:
        raise FileError(f"its file_data is not valid base64 ({error})") from None


def parse(file: FilePart, max_pages: int) -> Parsed:
    """The file's text (CPU-bound: call it in a thread). Raises FileError."""
    raw = _payload(file.part["file_data"])
    if file.kind == "text":
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise FileError("it is declared as text but is not UTF-8") from None
        text = f"Contents of the file {file.name} (text):\n\n{body}"
        return Parsed(text, None, None, len(body))
    return _parse_pdf(file.name, raw, max_pages)


def _parse_pdf(name: str, raw: bytes, max_pages: int) -> Parsed:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(raw))
        if reader.is_encrypted and not reader.decrypt(""):
            raise FileError("it is an encrypted PDF")
        total = len(reader.pages)
        pages = [reader.pages[index].extract_text() or "" for index in range(min(total, max_pages))]
    except FileError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
        raise FileError(f"it could not be read as a PDF ({type(error).__name__}: {error})") from None
    body = "\n\n".join(f"--- page {number} ---\n{text.strip()}" for number, text in enumerate(pages, 1))
    text = f"Contents of the file {name} (PDF, {total} page(s), text extracted by the gateway):\n\n{body}"
    if total > len(pages):
        text += f"\n\n[Only the first {len(pages)} of {total} pages were extracted: the file-parser page limit.]"
    return Parsed(text, total, len(pages), len(body))
