"""The management API's Django REST framework and drf-spectacular settings, read by gateway_project/settings.py:
constants of the code (no environment variable changes them).
"""

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["gateway_project.api.permissions.IsManagementKey"],
    "DEFAULT_PAGINATION_CLASS": "gateway_project.api.pagination.OffsetLimitPagination",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["gateway_project.api.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "gateway_project.api.errors.drf_exception_handler",
    "DEFAULT_METADATA_CLASS": "gateway_project.api.metadata.GatewayMetadata",  # OPTIONS on every route
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    "PAGE_SIZE": 50,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Model Gateway API",
    "DESCRIPTION": "Inference gateway and its management API. Every failure uses the error envelope.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "gateway_project.api.openapi.add_error_responses",
        "inference.openapi.add_responses_operation",
        "inference.embeddings.openapi.add_embeddings_operation",
    ],
    "ENUM_NAME_OVERRIDES": {
        "ResetIntervalEnum": "guardrails.models.ResetInterval",
        "DataRegionEnum": "guardrails.validation.REGIONS",
        "GenerationStatusEnum": "inference.models.GenerationStatus",
        "PresetStatusEnum": "presets.models.PresetStatus",
        "AuditActionEnum": "audit.models.Action",
        "GuardrailRuleActionEnum": "guardrails.validation.ACTIONS",
        "AuditSourceEnum": "audit.models.Source",
    },
    # Swagger UI and ReDoc from the drf-spectacular-sidecar package's static files: no CDN, works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "/static/favicon.ico",
    "REDOC_DIST": "SIDECAR",
    # validatorUrl null: Swagger UI would otherwise show a badge image fetched from validator.swagger.io.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
}
