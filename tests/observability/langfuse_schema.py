"""The subset of Langfuse's public ingestion API schema (`POST /api/public/ingestion`, IngestionRequest in
Langfuse's Fern/OpenAPI definition) that our batches use, as a JSON schema."""

ISO_DATETIME = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"}
NULLABLE_DATETIME = {"anyOf": [ISO_DATETIME, {"type": "null"}]}
OBSERVATION_LEVEL = {"enum": ["DEBUG", "DEFAULT", "WARNING", "ERROR"]}

TRACE_BODY = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "id": {"type": ["string", "null"]},
        "timestamp": NULLABLE_DATETIME,
        "name": {"type": ["string", "null"]},
        "userId": {"type": ["string", "null"]},
        "input": {},
        "output": {},
        "sessionId": {"type": ["string", "null"]},
        "release": {"type": ["string", "null"]},
        "version": {"type": ["string", "null"]},
        "metadata": {},
        "tags": {"type": ["array", "null"], "items": {"type": "string"}},
        "environment": {"type": ["string", "null"]},
        "public": {"type": ["boolean", "null"]},
    },
}

OBSERVATION_PROPERTIES = {
    "id": {"type": ["string", "null"]},
    "traceId": {"type": ["string", "null"]},
    "name": {"type": ["string", "null"]},
    "startTime": NULLABLE_DATETIME,
    "endTime": NULLABLE_DATETIME,
    "metadata": {},
    "input": {},
    "output": {},
    "level": OBSERVATION_LEVEL,
    "statusMessage": {"type": ["string", "null"]},
    "parentObservationId": {"type": ["string", "null"]},
    "version": {"type": ["string", "null"]},
    "environment": {"type": ["string", "null"]},
}

SPAN_BODY = {"type": "object", "additionalProperties": False, "properties": OBSERVATION_PROPERTIES}

GENERATION_BODY = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        **OBSERVATION_PROPERTIES,
        "completionStartTime": NULLABLE_DATETIME,
        "model": {"type": ["string", "null"]},
        "modelParameters": {
            "type": ["object", "null"],
            "additionalProperties": {"type": ["string", "integer", "number", "boolean", "array", "null"]},
        },
        "usageDetails": {"type": ["object", "null"], "additionalProperties": {"type": "integer"}},
        "costDetails": {"type": ["object", "null"], "additionalProperties": {"type": "number"}},
        "promptName": {"type": ["string", "null"]},
        "promptVersion": {"type": ["integer", "null"]},
    },
}


def _event(kind: str, body: dict) -> dict:
    return {
        "type": "object",
        "required": ["id", "timestamp", "type", "body"],
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string"},
            "timestamp": ISO_DATETIME,
            "metadata": {},
            "type": {"const": kind},
            "body": body,
        },
    }


INGESTION_REQUEST = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["batch"],
    "properties": {
        "batch": {
            "type": "array",
            "items": {
                "oneOf": [
                    _event("trace-create", TRACE_BODY),
                    _event("span-create", {**SPAN_BODY, "required": ["id"]}),
                    _event("generation-create", {**GENERATION_BODY, "required": ["id"]}),
                ]
            },
        },
        "metadata": {},
    },
}
