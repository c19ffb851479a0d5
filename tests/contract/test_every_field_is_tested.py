"""Every request field `/responses` accepts is proven to do something: the walk over the generated OpenAPI schema
of the request (inference.openapi, recursing into objects, array items and `oneOf` variants, plus one path per
plugin kind and per server-tool kind) must find each path in tests/contract/field_registry.py, and every test
the registry names must exist (collected by pytest). A field added to the schema without a test that shows
what it changes upstream or for the client (or its 400) fails here, naming the field.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from inference.openapi import REQUEST
from inference.schema_parts import PLUGIN_IDS
from inference.servertools.registry import load
from tests.contract.field_registry import FIELDS

ROOT = Path(__file__).resolve().parents[2]


def walk(schema: Any, path: str = "", found: set[str] | None = None) -> set[str]:
    """The field paths of a JSON schema: `a.b` for object members, `a[]` for array items; oneOf/anyOf merged."""
    found = set() if found is None else found
    if not isinstance(schema, dict):
        return found
    for variant in [*schema.get("oneOf", ()), *schema.get("anyOf", ())]:
        walk(variant, path, found)
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        walk(schema["items"], f"{path}[]", found)
    for name, sub in (schema.get("properties") or {}).items():
        child = f"{path}.{name}" if path else name
        found.add(child)
        walk(sub, child, found)
    return found


def accepted_fields() -> set[str]:
    fields = walk(REQUEST)
    fields |= {f"plugins[id={plugin_id}]" for plugin_id in PLUGIN_IDS}
    fields |= {f"tools[type={kind}]" for kind in load()}
    return fields


def test_the_walk_reaches_nested_fields():
    fields = accepted_fields()
    for path in ("text.format.schema", "tools[].defer_loading", "plugins[].max_results", "provider.max_price.prompt"):
        assert path in fields
    assert "stop_server_tools_when[].step_count" in fields and "plugins[id=web]" in fields
    assert walk({"type": "array", "items": {"properties": {"a": {"oneOf": [{"properties": {"b": {}}}]}}}}) == {
        "[].a",
        "[].a.b",
    }


def test_every_accepted_field_has_a_registered_test():
    fields = accepted_fields()
    missing = sorted(fields - set(FIELDS))
    assert not missing, f"accepted fields without a registered test (tests/contract/field_registry.py): {missing}"
    stale = sorted(set(FIELDS) - fields)
    assert not stale, f"registry entries for fields the schema no longer has: {stale}"
    empty = sorted(path for path, tests in FIELDS.items() if not tests)
    assert not empty, f"registry entries without a test: {empty}"


def _collected(files: list[str]) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return {line.strip() for line in result.stdout.splitlines() if "::" in line}


def test_every_registered_test_exists():
    node_ids = sorted({node for tests in FIELDS.values() for node in tests})
    collected = _collected(sorted({node.split("::")[0] for node in node_ids}))
    absent = [
        node
        for node in node_ids
        if node not in collected and ("[" in node or not any(c.startswith(f"{node}[") for c in collected))
    ]
    assert not absent, f"registered tests that pytest does not collect: {absent}"
