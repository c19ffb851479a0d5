"""The management plane's JSON body parser (REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]).

DRF's stock parser decodes with the standard library, whose recursion ends in a RecursionError (500) near
1000 levels, and lets NUL characters through to PostgreSQL, which refuses them (500 after validation).
This one decodes with orjson and applies the limits of every JSON body of the gateway
(gateway_project/json_input.py): a 400 in the envelope naming the field.
"""

from __future__ import annotations

from rest_framework.parsers import BaseParser
from rest_framework.renderers import JSONRenderer

from gateway_project import json_input


class JSONParser(BaseParser):
    """`application/json` bodies, decoded with orjson and checked for depth and NUL characters."""

    media_type = "application/json"
    renderer_class = JSONRenderer

    def parse(self, stream, media_type=None, parser_context=None):
        return json_input.loads(stream.read())
