"""Mutation check of the member registry (tests/contract/test_member_matrix.py): does each member's test fail
when the member's effect is removed from the source?

Each mutation is a one-line source edit (a routing filter or a translation taken out). The working tree
(tracked and new files, not .git) is copied once to a temporary directory; for each mutation the edit is applied
there, the registry's cells of the member it touches are run (`pytest -k`), and the edit is undone. A mutation
is KILLED when those tests fail, SURVIVED when they pass, NOT APPLICABLE when its line is no longer in the source
(the source moved: update the mutation). The baseline (no mutation) must pass first.

The mutations (file: what is removed -> the registry cells expected to fail):

 1. inference/routing.py: `data_collection: deny` no longer excludes providers that publish prompts
 2. inference/routing.py: the `max_price.completion` filter removed
 3. inference/routing.py: the `max_price.prompt` filter removed
 4. inference/routing.py: the `max_price.request` filter removed
 5. inference/routing.py: the `zdr` filter removed
 6. inference/routing.py: the `ignore` filter removed
 7. inference/providers/anthropic.py: `parallel_tool_calls: false` no longer sent as `disable_parallel_tool_use`
 8. inference/providers/anthropic.py: `temperature` no longer sent
 9. inference/providers/anthropic.py: `stop` no longer sent as `stop_sequences`
10. inference/providers/anthropic.py: `text.format` json_schema no longer sent as `output_format`
11. inference/providers/openai_chat.py: `parallel_tool_calls` no longer sent
12. inference/providers/openai_chat.py: `top_k` no longer sent
13. inference/accounting.py: the row no longer records the request's `metadata`
14. inference/handler.py: the end-user identity sent as given instead of hashed

Usage: `.venv/bin/python scripts/mutation_check.py [--only N,M]` (DATABASE_URL / REDIS_URL as for the tests).
Exit status 1 when a mutation survived or could not be applied.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MATRIX = "tests/contract/test_member_matrix.py"


@dataclass(frozen=True)
class Mutation:
    says: str
    path: str
    line: str  # the text removed (a substring of one line)
    replacement: str
    cells: str  # pytest -k selection of the registry cells of the member


ROUTING = "inference/routing.py"
ANTHROPIC = "inference/providers/anthropic.py"
CHAT = "inference/providers/openai_chat.py"

MUTATIONS = [
    Mutation(
        "data_collection deny keeps providers that publish prompts",
        ROUTING,
        "lambda c: not c.trains_on_data and not c.publishes_prompts",
        "lambda c: not c.trains_on_data",
        "provider.data_collection",
    ),
    Mutation(
        "max_price.completion filter removed",
        ROUTING,
        'filters.append(("above provider.max_price.completion", lambda c: c.completion_price * MILLION <= limit))',
        "pass",
        "max_price.completion",
    ),
    Mutation(
        "max_price.prompt filter removed",
        ROUTING,
        'filters.append(("above provider.max_price.prompt", lambda c: c.prompt_price * MILLION <= limit))',
        "pass",
        "max_price.prompt",
    ),
    Mutation(
        "max_price.request filter removed",
        ROUTING,
        'filters.append(("above provider.max_price.request", lambda c: c.request_price <= fee))',
        "pass",
        "max_price.request",
    ),
    Mutation(
        "zdr filter removed",
        ROUTING,
        'filters.append(("provider.zdr requires zero data retention", lambda c: c.zdr))',
        "pass",
        "provider.zdr",
    ),
    Mutation(
        "ignore filter removed",
        ROUTING,
        'filters.append(("excluded by provider.ignore", lambda c: c.provider_slug not in ignore))',
        "pass",
        "provider.ignore",
    ),
    Mutation(
        "anthropic: parallel_tool_calls false dropped",
        ANTHROPIC,
        'mapped = (mapped or {"type": "auto"}) | {"disable_parallel_tool_use": True}',
        "pass",
        "parallel_tool_calls and anthropic",
    ),
    Mutation(
        "anthropic: temperature dropped",
        ANTHROPIC,
        'out["temperature"] = min(float(body["temperature"]), 1.0)',
        "pass",
        "temperature and anthropic",
    ),
    Mutation(
        "anthropic: stop not sent as stop_sequences",
        ANTHROPIC,
        'out["stop_sequences"] = list(body["stop"])',
        "pass",
        "stop and anthropic and not stop_server",
    ),
    Mutation(
        "anthropic: json_schema format dropped",
        ANTHROPIC,
        'out["output_format"] = {"type": "json_schema", "schema": fmt.get("schema") or {}}',
        "pass",
        "(responses:text: or response_format or output_format) and anthropic",
    ),
    Mutation(
        "chat: parallel_tool_calls dropped",
        CHAT,
        'out["parallel_tool_calls"] = body["parallel_tool_calls"]',
        "pass",
        "parallel_tool_calls and openai-chat",
    ),
    Mutation(
        "chat: top_k dropped",
        CHAT,
        'out["top_k"] = body["top_k"]',
        "pass",
        "top_k and openai-chat",
    ),
    Mutation(
        "the row loses the request's metadata",
        "inference/accounting.py",
        'metadata={} if stripped else body.get("metadata") or {},',
        "metadata={},",
        "metadata and not client_metadata",
    ),
    Mutation(
        "the end-user identity sent as given",
        "inference/handler.py",
        'body["safety_identifier"] = hash_identifier(org, identity)',
        'body["safety_identifier"] = identity',
        "user or safety_identifier",
    ),
]


def copy_tree(target: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, files):
        source = ROOT / name.decode()
        if source.is_file() and not source.is_symlink():
            (target / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name.decode())
    (target / ".venv").symlink_to((ROOT / ".venv").resolve())
    if (ROOT / ".env").is_file():  # the local settings `make run` writes (not tracked)
        shutil.copy2(ROOT / ".env", target / ".env")


def run_cells(tree: Path, cells: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", MATRIX, "-q", "-x", "-p", "no:cacheprovider", "-k", cells],
        cwd=tree,
        capture_output=True,
        text=True,
    )
    summary = (done.stdout.strip().splitlines() or [""])[-1]
    return done.returncode, summary


def check(tree: Path, mutation: Mutation) -> str:
    source = tree / mutation.path
    original = source.read_text(encoding="utf-8")
    if original.count(mutation.line) != 1:
        return "NOT APPLICABLE"
    source.write_text(original.replace(mutation.line, mutation.replacement), encoding="utf-8")
    try:
        code, summary = run_cells(tree, mutation.cells)
    finally:
        source.write_text(original, encoding="utf-8")
    verdict = {0: "SURVIVED", 1: "KILLED"}.get(code, f"ERROR ({code})")
    return f"{verdict}  [{summary}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated mutation numbers (1-based)")
    args = parser.parse_args()
    chosen = [int(n) for n in args.only.split(",")] if args.only else range(1, len(MUTATIONS) + 1)
    with tempfile.TemporaryDirectory(prefix="mutation-") as name:
        tree = Path(name)
        copy_tree(tree)
        selection = " or ".join(f"({MUTATIONS[n - 1].cells})" for n in chosen)
        code, summary = run_cells(tree, selection)
        print(f"baseline (no mutation): {'PASSED' if code == 0 else 'FAILED'}  [{summary}]", flush=True)
        if code != 0:
            return 1
        verdicts = []
        for number in chosen:
            mutation = MUTATIONS[number - 1]
            verdict = check(tree, mutation)
            verdicts.append(verdict)
            print(f"{number:2}. {mutation.says}: {verdict}", flush=True)
    killed = sum(v.startswith("KILLED") for v in verdicts)
    print(f"{len(verdicts)} mutations, {killed} killed, {len(verdicts) - killed} not killed")
    return 0 if killed == len(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
