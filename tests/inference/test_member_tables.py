"""The member tables (inference/members.py) are the ones the validators act on and the ones docs/wire-formats.md
shows: every member a validator processes is in its format's table and every table entry is processed (or
refused with the table's reason); the router parameters are the ones routing leaves out; the docs' tables are
generated from the code (`python -m inference.members` rewrites them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway_project.api.errors import GatewayError
from inference import members, schema
from inference.ingress import chat_request, messages_request
from inference.router_parameters import ROUTER_KEYS
from inference.unknown_members import FORWARDED

DOC = Path(__file__).resolve().parents[2] / "docs" / "wire-formats.md"


def refused(table: dict[str, members.Member]) -> set[str]:
    return {name for name, member in table.items() if member.handling == members.REFUSED}


def test_the_docs_show_the_tables_of_the_code():
    text = DOC.read_text(encoding="utf-8")
    for name in members.TABLES:
        assert members.BEGIN.format(name) in text, f"docs/wire-formats.md has no table for {name}"
    assert members.rewrite_docs(text) == text, "docs/wire-formats.md differs: run python -m inference.members"


def test_each_table_is_what_its_validator_processes():
    assert set(members.CHAT) - refused(members.CHAT) == set(chat_request.HANDLED) | set(chat_request.SHARED)
    assert set(members.MESSAGES) - refused(members.MESSAGES) == set(messages_request.HANDLED) | set(
        messages_request.SHARED
    )
    assert set(members.RESPONSES) - refused(members.RESPONSES) == set(schema.CHECKERS)


@pytest.mark.parametrize("table", ["chat-completions", "responses"])
def test_router_parameters_are_the_ones_routing_leaves_out(table):
    routed = {name for name, m in members.TABLES[table].items() if m.handling == members.ROUTER}
    assert routed <= ROUTER_KEYS | {"logprobs"}  # Chat's logprobs: true is the canonical top_logprobs


def _chat(body: dict) -> dict:
    return chat_request.to_canonical({**body, "messages": [{"role": "user", "content": "hi"}]})


def _messages(body: dict) -> dict:
    return messages_request.to_canonical({**body, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5})


def _responses(body: dict) -> dict:
    return schema.validate_body({**body, "input": "hi"}, forward_unknown=True)


REFUSALS = [
    (translate, table, name)
    for translate, table in ((_chat, members.CHAT), (_messages, members.MESSAGES), (_responses, members.RESPONSES))
    for name in sorted(refused(table))
]


@pytest.mark.parametrize(("translate", "table", "name"), REFUSALS)
def test_refused_members_are_a_400_with_the_tables_reason(translate, table, name):
    with pytest.raises(GatewayError) as caught:
        translate({"model": "a/b", name: {}})
    assert caught.value.message == f"{name}: is not supported: {table[name].note}"


def test_unknown_members_are_carried_and_known_ones_are_not():
    body = {"model": "a/b", "messages": [{"role": "user", "content": "hi"}], "new_member": [1], "temperature": 1}
    out = chat_request.to_canonical(body)
    assert out[FORWARDED] == {"new_member": [1]} and out["temperature"] == 1
    assert FORWARDED not in chat_request.to_canonical({"model": "a/b", "messages": body["messages"]})
    responses = schema.validate_body({"model": "a/b", "input": "hi", "new_member": 2}, forward_unknown=True)
    assert responses == {"model": "a/b", "input": "hi", FORWARDED: {"new_member": 2}}
    with pytest.raises(GatewayError):  # strict (management bodies: presets)
        schema.validate_body({"model": "a/b", "input": "hi", "new_member": 2})
