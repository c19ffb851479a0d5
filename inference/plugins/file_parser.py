"""The `file-parser` plugin: PDF and text files turned into text for models that cannot read files.

Plugin object: `{"id": "file-parser", "pdf": {"engine": "pdf-text" | "native", "max_pages": 1..N}}` (all
optional). Engines: `pdf-text` extracts the text layer with pypdf in the gateway, for every model; `native`
sends files unchanged and only to models that read files (catalog `input_modalities` has `file`); without an
engine, each candidate endpoint gets the file natively when its model reads files and parsed text otherwise.
OpenRouter's `mistral-ocr` and `cloudflare-ai` are refused with 400 (no OCR service here). Parsing happens
once, before the first turn, in a worker thread; the per-candidate choice is made on every attempt
(`shape`), so a fallback from a model that reads PDFs to one that does not sends the text.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

from django.conf import settings

from gateway_project.api.errors import validation_error
from inference.plugins.context import field_of
from inference.plugins.files import FileError, FilePart, Parsed, file_parts, parse
from inference.plugins.registry import Plugin, register
from inference.providers.base import ProviderError, ProviderErrorKind

ENGINES = ("pdf-text", "native")
NOT_HERE = ("mistral-ocr", "cloudflare-ai")  # OpenRouter's OCR engines: services this gateway does not run
KEY = "plugins.file_parser"


def _check(name: str, plugin: dict[str, Any]) -> None:
    for key in plugin:
        if key not in ("id", "enabled", "pdf"):
            raise validation_error(f"{name}.{key}", "unknown parameter")
    pdf = plugin.get("pdf")
    if pdf is None:
        return
    if not isinstance(pdf, dict):
        raise validation_error(f"{name}.pdf", "must be an object")
    for key in pdf:
        if key not in ("engine", "max_pages"):
            raise validation_error(f"{name}.pdf.{key}", "unknown parameter")
    engine = pdf.get("engine")
    if engine in NOT_HERE:
        raise validation_error(
            f"{name}.pdf.engine", f"engine '{engine}' is not available on this gateway (it has {', '.join(ENGINES)})"
        )
    if engine is not None and engine not in ENGINES:
        raise validation_error(f"{name}.pdf.engine", f"must be one of {', '.join(ENGINES)}")
    limit = settings.GATEWAY_FILE_PARSER_MAX_PAGES
    pages = pdf.get("max_pages")
    if pages is not None and (isinstance(pages, bool) or not isinstance(pages, int) or not 1 <= pages <= limit):
        raise validation_error(f"{name}.pdf.max_pages", f"must be an integer from 1 to {limit}")


def _engine(plugin: dict[str, Any]) -> str | None:
    return (plugin.get("pdf") or {}).get("engine")


def reads_files(candidate: Any) -> bool:
    return "file" in candidate.input_modalities


def _parses_for(engine: str | None, candidate: Any) -> bool:
    return engine == "pdf-text" or (engine is None and not reads_files(candidate))


def _skip(candidate: Any, why: str) -> ProviderError:
    error = ProviderError(ProviderErrorKind.BAD_REQUEST, f"file-parser: {candidate.model_slug} {why}")
    error.endpoint_specific = True
    return error


def _refusal(ctx: Any, plugin: dict[str, Any], files: list[FilePart]) -> str | None:
    """Why no candidate can be served (an error message), or None."""
    engine, candidates = _engine(plugin), ctx.candidates or []
    opaque = [f for f in files if f.kind == "opaque"]
    if engine == "native":
        if not any(reads_files(c) for c in candidates):
            return "engine native needs a model that reads files, and none of the request's models does"
        return None
    if opaque and all(_parses_for(engine, c) for c in candidates):
        return (
            f"{opaque[0].field}: file '{opaque[0].name}' cannot be turned into text (only PDFs and text files sent "
            "inline as file_data can), and no model of the request reads files"
        )
    return None


async def _run(ctx: Any, plugin: dict[str, Any], state: Any) -> Decimal:
    source = ctx.body.get("input")
    files = file_parts(source if isinstance(source, list) else [])
    stage: dict[str, Any] = {"type": "plugin", "name": "file-parser"}
    engine = _engine(plugin)
    if not files:
        ctx.pipeline.append({**stage, "summary": "no file in the input", "data": {"engine": engine, "files": []}})
        return Decimal(0)
    why = _refusal(ctx, plugin, files)
    if why is not None:
        field = f"{field_of(ctx, plugin)}.pdf.engine" if engine == "native" else field_of(ctx, plugin)
        raise validation_error(field, why)
    candidates = ctx.candidates or []
    parsed: dict[int, Parsed] = {}
    if any(_parses_for(engine, c) for c in candidates):
        limit = (plugin.get("pdf") or {}).get("max_pages") or settings.GATEWAY_FILE_PARSER_MAX_PAGES
        readable = [f for f in files if f.kind != "opaque"]
        try:
            results = await asyncio.to_thread(lambda: [parse(f, limit) for f in readable])
        except FileError as error:  # which file: parse them one by one again only to name it
            bad = next(f for f in readable if _fails(f, limit))
            raise validation_error(bad.field, f"file '{bad.name}' cannot be parsed: {error}") from None
        parsed = {id(f.part): result for f, result in zip(readable, results, strict=True)}
    ctx.extras[KEY] = parsed
    report = [_entry(f, parsed.get(id(f.part))) for f in files]
    natively = [c.model_slug for c in candidates if not _parses_for(engine, c) and reads_files(c)]
    as_text = [c.model_slug for c in candidates if _parses_for(engine, c)]
    summary = f"{len(parsed)} of {len(files)} file(s) parsed to text" if parsed else f"{len(files)} file(s) sent as is"
    data = {"engine": engine or "auto", "files": report, "text_for": _unique(as_text), "native_for": _unique(natively)}
    ctx.pipeline.append({**stage, "summary": summary, "data": data})
    return Decimal(0)


def _fails(file: FilePart, limit: int) -> bool:
    try:
        parse(file, limit)
    except FileError:
        return True
    return False


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _entry(file: FilePart, result: Parsed | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": file.name, "kind": file.kind, "parsed": result is not None}
    if result is not None:
        entry.update(chars=result.chars)
        if result.pages is not None:
            truncated = result.pages_parsed < result.pages
            entry.update(pages=result.pages, pages_parsed=result.pages_parsed, truncated=truncated)
    return entry


def _shape(ctx: Any, plugin: dict[str, Any], body: dict[str, Any], candidate: Any) -> dict[str, Any]:
    engine = _engine(plugin)
    parsed: dict[int, Parsed] = ctx.extras.get(KEY) or {}
    items = body.get("input")
    if not isinstance(items, list):
        return body
    files = file_parts(items)
    if not files:
        return body
    if engine == "native" and not reads_files(candidate):
        raise _skip(candidate, "does not read files (file-parser engine native)")
    if not _parses_for(engine, candidate):
        return body
    if any(id(f.part) not in parsed for f in files):
        raise _skip(candidate, "does not read files and a file of the request cannot be turned into text")
    return {**body, "input": [_with_text(item, parsed) for item in items]}


def _with_text(item: Any, parsed: dict[int, Parsed]) -> Any:
    content = item.get("content") if isinstance(item, dict) else None
    if not isinstance(content, list) or not any(id(part) in parsed for part in content):
        return item
    parts = [{"type": "input_text", "text": parsed[id(p)].text} if id(p) in parsed else p for p in content]
    return {**item, "content": parts}


register(Plugin(id="file-parser", check=_check, run=_run, shape=_shape))
