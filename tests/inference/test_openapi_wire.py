"""The OpenAPI document describes POST /chat/completions and /messages with exactly the members their ingress
adapters know (any other member is carried for a same-format upstream), and the documented examples are
accepted."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from gateway_project.api.errors import GatewayError
from inference.ingress import chat_request, messages_request
from inference.openapi_wire import CHAT_REQUEST, MESSAGES_REQUEST
from inference.unknown_members import FORWARDED

CASES = [(CHAT_REQUEST, chat_request.to_canonical), (MESSAGES_REQUEST, messages_request.to_canonical)]


@pytest.mark.parametrize(("schema", "translate"), CASES)
def test_documented_members_are_the_accepted_ones(schema, translate):
    assert schema["additionalProperties"] is True
    translate(dict(schema["example"]))
    for name in schema["properties"]:
        try:
            translate({**schema["example"], name: None})
        except GatewayError as error:  # a documented member may refuse null, never as unknown
            assert "unknown parameter" not in error.message, name
    canonical = translate({**schema["example"], "undocumented_member": 1})
    assert canonical[FORWARDED] == {"undocumented_member": 1}


@pytest.mark.django_db
def test_the_document_lists_the_operations():
    document = APIClient().get("/api/v1/openapi.json").json()
    chat = document["paths"]["/api/v1/chat/completions"]["post"]
    messages = document["paths"]["/api/v1/messages"]["post"]
    assert chat["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("ChatCompletionsRequest")
    assert messages["responses"]["401"]["content"]["application/json"]["schema"]["$ref"].endswith("AnthropicError")
    assert {"ChatCompletion", "Message", "MessagesRequest"} <= set(document["components"]["schemas"])
