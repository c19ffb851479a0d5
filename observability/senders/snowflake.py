"""`snowflake`: one INSERT per trace through the Snowflake SQL API (`POST
https://<account>.snowflakecomputing.com/api/v2/statements`, `Authorization: Bearer <token>`; Snowflake tells
an OAuth token from a programmatic access token itself). Values are bound, never interpolated; the delivery
id is the request id, so a retried delivery is not executed twice.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from observability.senders.base import OutgoingRequest, json_request

DEFAULT_TABLE = "GATEWAY_TRACES"
STATEMENT = (
    "INSERT INTO IDENTIFIER(?) (ID, REQUEST_ID, STARTED_AT, MODEL, PROVIDER, STATUS, PAYLOAD) "
    "SELECT ?, ?, TO_TIMESTAMP_TZ(?), ?, ?, ?, PARSE_JSON(?)"
)


def statement(trace: dict, config: dict) -> dict:
    values = [
        config.get("table") or DEFAULT_TABLE,
        trace["id"],
        trace.get("request_id") or "",
        trace["started_at"],
        trace.get("model") or "",
        trace.get("provider") or "",
        trace.get("status") or "",
        json.dumps(trace, default=str),
    ]
    body = {
        "statement": STATEMENT,
        "timeout": 60,
        "bindings": {str(index): {"type": "TEXT", "value": value} for index, value in enumerate(values, start=1)},
    }
    for key in ("database", "schema", "warehouse"):
        if config.get(key):
            body[key] = config[key]
    return body


def build(trace: dict, config: dict, delivery_id: str) -> OutgoingRequest:
    account = config["account"].strip().lower()
    url = f"https://{quote(account, safe='-_.')}.snowflakecomputing.com/api/v2/statements?requestId={delivery_id}"
    headers = {"Authorization": f"Bearer {config['token']}", "Accept": "application/json"}
    return json_request(url, statement(trace, config), headers)
