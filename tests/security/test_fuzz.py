"""A bounded `make fuzz`: schemathesis against the live OpenAPI schema of the in-process gateway.

Same runs and checks as scripts/fuzz.py (no 5xx, statuses, content types and bodies conforming to the
schema, every error in the envelope), with the `examples` and `fuzzing` phases and 3 examples per
operation, so CI exercises every operation in well under a minute. `make fuzz` runs the full version.
"""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from scripts.fuzz import RESPONSES_PATH, run_schemathesis
from tests.byok.helpers import make_provider
from tests.conftest import make_org


def operations(base_url: str) -> list[tuple[str, str]]:
    with urllib.request.urlopen(base_url + "/api/v1/openapi.json") as response:
        schema = json.load(response)
    return [
        (method.upper(), path)
        for path, item in schema["paths"].items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    ]


@pytest.mark.timeout(180)
def test_schemathesis_finds_no_failure_on_any_operation(gateway_server, transactional_db):
    ops = operations(gateway_server.url)
    assert ("POST", RESPONSES_PATH) in ops
    assert len(ops) >= 50
    make_provider("openai")  # so the fuzzer's BYOK credential (scripts.fuzz.seed_resources) can be created
    org = make_org("Fuzz")
    status, output = run_schemathesis(
        gateway_server.url,
        org.management_key,
        org.inference_key,
        max_examples=3,
        phases="examples,fuzzing",
        seed=20261121,
    )
    assert status == 0, output[-6000:]
    assert "fuzz: no " not in output  # every resource type was seeded
    tested = [int(n) for n in re.findall(r"Tested: (\d+)", output)]
    assert sum(tested) == len(ops), output[-3000:]
    for generated, passed in re.findall(r"(\d+) generated, (\d+) passed", output):
        assert int(generated) == int(passed) > 0
    assert len(re.findall(r"\d+ generated, \d+ passed", output)) == 3, output[-3000:]


@pytest.mark.timeout(180)
def test_hostile_input_on_every_operation_is_never_a_server_error(gateway_server, transactional_db):
    """The hostile-input pass of `make fuzz` (scripts/fuzz_hostile.py): deep bodies and NUL characters."""
    from scripts.fuzz_hostile import run_hostile

    org = make_org("Hostile")
    status, output = run_hostile(gateway_server.url, org.management_key, org.inference_key)
    assert status == 0, output
    assert int(re.search(r"(\d+) requests", output).group(1)) > 200
