"""Which test proves each accepted `/responses` request field does something: changes what the provider is sent
or what the client gets, or is refused with a 400 naming it (then the refusal test is registered).

Keys are the paths the OpenAPI walk produces (tests/contract/test_every_field_is_tested.py): `a.b` for an object
member, `a[]` for array items, `plugins[id=<id>]` for each plugin kind and `tools[type=<kind>]` for each server
tool. The members of every ingress x provider format are in tests/contract/member_matrix.py (the routing
members' cells are named here too). Values are pytest node ids: `file::test` (any of its parametrizations) or
`file::test[id]` (exactly one). A new field in the schema fails the walk until it gets an entry here; an entry
whose test is gone fails it too.
"""

from __future__ import annotations

CODEX = "tests/inference/test_codex_members.py"
FE = "tests/inference/test_field_effects.py::test_field_reaches_the_upstream"
REFUSED = "tests/inference/test_field_effects.py::test_field_the_provider_format_cannot_carry_is_400"
OMITTED = "tests/inference/test_field_effects.py::test_sampling_parameter_the_provider_format_cannot_carry_is_left_out"
PARAMS = "tests/inference/test_router_parameters.py"
ROUTED = "test_router_parameter_reaches_a_supporting_endpoint_and_is_left_out_elsewhere"
IDENTITY = "tests/inference/test_field_effects.py::test_end_user_identity_reaches_the_upstream_hashed"
INVALID = "tests/inference/test_validation.py::test_invalid_field_is_named"
ROUTING = "tests/inference/test_routing_select.py"
LOOP = "tests/servertools/test_loop.py"
PLUGINS = "tests/servertools/test_plugins.py"
AUTO = "tests/routers/test_auto_router.py"
FILES = "tests/servertools/test_file_parser.py"
COMPRESSION = "tests/servertools/test_context_compression.py"
RF = "tests/routers/test_request_features.py"
MOD = "tests/servertools/test_moderation.py"
MATRIX = "tests/contract/test_member_matrix.py::test_member_on_provider_format"
STOP = f"{LOOP}::test_stop_condition_fires_exactly_when_it_should"
STREAM_OPTIONS = "tests/inference/test_field_effects.py::test_stream_options_the_stream_always_ends_with_the_usage"
INPUT = [f"{FE}[input]", f"{FE}[input-anthropic]"]
FORMAT = [f"{FE}[text.format]", f"{FE}[text.format-chat]", f"{FE}[text.format-anthropic]"]
TOOLS = [f"{FE}[tools]", f"{FE}[tools-chat]"]

FIELDS: dict[str, list[str]] = {
    "background": [f"{INVALID}[background]"],  # only false (the default): true is refused
    "cache_control": [f"{FE}[cache_control]"],
    "cache_control.ttl": [f"{FE}[cache_control]"],
    "cache_control.type": [f"{FE}[cache_control]"],
    "conversation": [f"{INVALID}[conversation]"],  # only null
    "debug": [
        "tests/inference/test_responses.py::test_debug_echo_upstream_body_comes_first_with_hashed_safety_identifier"
    ],
    "debug.echo_upstream_body": [
        "tests/inference/test_responses.py::test_debug_echo_upstream_body_comes_first_with_hashed_safety_identifier"
    ],
    "frequency_penalty": [f"{FE}[frequency_penalty]", f"{OMITTED}[frequency_penalty-responses]"],
    "image_config": [
        f"{RF}::test_image_output_goes_to_the_endpoint_that_can_and_comes_back",
        f"{RF}::test_image_output_refusals_name_the_field",
    ],
    "include": [f"{FE}[include]", f"{REFUSED}[include-chat]"],
    "client_metadata": [f"{CODEX}::test_codex_default_members_are_honoured_on_every_format"],
    "input": INPUT,
    "input[].content": INPUT,
    "input[].content[].text": INPUT,
    "input[].content[].type": INPUT,
    "input[].role": INPUT,
    "input[].type": INPUT,
    "instructions": [f"{FE}[instructions]"],
    "max_output_tokens": [
        f"{FE}[max_output_tokens]",
        "tests/inference/test_responses.py::test_max_output_tokens_gives_incomplete",
    ],
    "max_tool_calls": [
        f"{LOOP}::test_max_tool_calls_bounds_the_steps",
        f"{LOOP}::test_max_tool_calls_zero_offers_no_server_tool",
    ],
    "metadata": ["tests/inference/test_field_effects.py::test_metadata_is_echoed_to_the_client_and_not_sent"],
    "min_p": [f"{PARAMS}::test_router_parameter_on_responses[min_p]", f"{PARAMS}::{ROUTED}[min_p]"],
    "modalities": [
        f"{FE}[modalities]",
        f"{RF}::test_image_output_goes_to_the_endpoint_that_can_and_comes_back",
        f"{RF}::test_image_output_refusals_name_the_field",
    ],
    "model": ["tests/inference/test_responses.py::test_sdk_create_returns_text_and_every_field"],
    "models": ["tests/inference/test_fallback.py::test_fallback_across_models"],
    "parallel_tool_calls": [f"{FE}[parallel_tool_calls]"],
    "plugins": [f"{PLUGINS}::test_web_plugin_adds_results_above_the_user_message"],
    "plugins[].allowed_models": [f"{AUTO}::test_allowed_and_excluded_patterns_and_context_length"],
    "plugins[].cost_tier": [f"{AUTO}::test_cost_tier_picks_within_a_quality_band_of_the_best"],
    "plugins[].enabled": [
        f"{AUTO}::test_a_disabled_router_plugin_leaves_the_model_to_the_client",
        "tests/servertools/test_response_healing.py::test_switched_off_plugin_leaves_the_output_alone",
    ],
    "plugins[].engine": [
        f"{PLUGINS}::test_web_plugin_engine_chooses_the_configured_engine",
        f"{COMPRESSION}::test_invalid_fields_are_400",  # context-compression: middle-out only
    ],
    "plugins[].excluded_models": [f"{AUTO}::test_allowed_and_excluded_patterns_and_context_length"],
    "plugins[].id": [f"{PLUGINS}::test_web_plugin_adds_results_above_the_user_message"],
    "plugins[].max_chars": [f"{PLUGINS}::test_web_fetch_plugin_adds_the_linked_pages"],
    "plugins[].max_results": [f"{PLUGINS}::test_web_plugin_adds_results_above_the_user_message"],
    "plugins[].max_urls": [f"{PLUGINS}::test_web_fetch_plugin_max_urls_fetches_the_first_links_only"],
    "plugins[].pin_model": [f"{AUTO}::test_pin_model_keeps_the_choice_per_session_and_organization"],
    "plugins[].search_prompt": [f"{PLUGINS}::test_web_plugin_custom_prompt_fee_and_stream"],
    "plugins[id=auto-beta-router]": [f"{AUTO}::test_model_slug_alone_and_the_beta_router_and_chat_completions"],
    "plugins[id=auto-router]": [f"{AUTO}::test_the_prompt_category_selects_the_quality_score"],
    "plugins[id=context-compression]": [f"{COMPRESSION}::test_middle_of_the_conversation_is_removed_until_it_fits"],
    "plugins[id=file-parser]": [f"{FILES}::test_pdf_becomes_text_for_a_model_that_cannot_read_files"],
    "plugins[].pdf": [f"{FILES}::test_engine_pdf_text_parses_even_for_a_model_that_reads_files_and_page_limit"],
    "plugins[].pdf.engine": [
        f"{FILES}::test_engine_pdf_text_parses_even_for_a_model_that_reads_files_and_page_limit",
        f"{FILES}::test_text_file_and_native_engine_skips_models_that_cannot_read",
    ],
    "plugins[].pdf.max_pages": [
        f"{FILES}::test_engine_pdf_text_parses_even_for_a_model_that_reads_files_and_page_limit"
    ],
    "plugins[id=fusion]": [
        "tests/routers/test_fusion.py::test_the_panel_answers_and_the_request_model_synthesizes",
        "tests/routers/test_fusion.py::test_fusion_refusals",
    ],
    "plugins[id=moderation]": [f"{MOD}::test_moderation_model_flags_violence_before_the_model_is_called"],
    "plugins[].analysis_models": [
        "tests/routers/test_fusion.py::test_the_panel_answers_and_the_request_model_synthesizes",
        "tests/routers/test_fusion.py::test_fusion_refusals",
    ],
    "plugins[].min_coding_score": [
        "tests/routers/test_pareto_router.py::test_the_cheapest_frontier_model_meeting_the_score",
    ],
    "plugins[].detectors": [
        f"{MOD}::test_clean_input_passes_and_chosen_detectors_apply",
        f"{MOD}::test_refusals_are_400_naming_the_field",
    ],
    "plugins[].check_output": [
        f"{MOD}::test_output_is_screened_when_asked",
        f"{MOD}::test_refusals_are_400_naming_the_field",
    ],
    "plugins[id=pareto-router]": [
        "tests/routers/test_pareto_router.py::test_the_cheapest_frontier_model_meeting_the_score"
    ],
    "plugins[id=response-healing]": [
        "tests/servertools/test_response_healing.py::test_fenced_json_with_a_trailing_comma_is_repaired"
    ],
    "plugins[id=web]": [f"{PLUGINS}::test_web_plugin_adds_results_above_the_user_message"],
    "plugins[id=web-fetch]": [f"{PLUGINS}::test_web_fetch_plugin_adds_the_linked_pages"],
    "presence_penalty": [f"{FE}[presence_penalty]", f"{OMITTED}[presence_penalty-anthropic]"],
    "previous_response_id": [f"{INVALID}[previous_response_id]"],  # only null: the API is stateless
    "prompt": [
        f"{FE}[prompt]",
        "tests/inference/test_field_effects.py::test_stored_prompt_is_refused_where_no_candidate_stores_prompts[prompt-chat]",
        "tests/inference/test_field_effects.py::test_stored_prompt_is_refused_where_no_candidate_stores_prompts[prompt-anthropic]",
        f"{RF}::test_a_stored_prompt_goes_only_to_providers_that_store_prompts",
    ],
    "prompt.id": [f"{FE}[prompt]"],
    "prompt.variables": [f"{FE}[prompt]"],
    "prompt_cache_key": [f"{FE}[prompt_cache_key]"],
    "prompt_cache_options": [f"{RF}::test_prompt_cache_options_are_forwarded_with_their_breakpoints"],
    "prompt_cache_options.mode": [f"{RF}::test_prompt_cache_options_are_forwarded_with_their_breakpoints"],
    "prompt_cache_options.ttl": [f"{RF}::test_prompt_cache_options_are_forwarded_with_their_breakpoints"],
    "provider": [f"{ROUTING}::test_order_puts_providers_first"],
    "provider.allow_fallbacks": [
        f"{ROUTING}::test_allow_fallbacks_false",
        "tests/inference/test_fallback.py::test_allow_fallbacks_false_stops_at_first_provider",
    ],
    "provider.data_collection": [
        f"{ROUTING}::test_data_collection_deny_and_zdr",
        *[
            f"{MATRIX}[responses:provider.data_collection:{fmt}]"
            for fmt in ("openai-responses", "openai-chat", "anthropic-messages")
        ],
    ],
    "provider.ignore": [
        f"{ROUTING}::test_only_and_ignore",
        *[
            f"{MATRIX}[responses:provider.ignore:{fmt}]"
            for fmt in ("openai-responses", "openai-chat", "anthropic-messages")
        ],
    ],
    "provider.max_price": [f"{ROUTING}::test_max_price_per_million_tokens"],
    "provider.max_price.completion": [
        f"{ROUTING}::test_max_price_per_million_tokens",
        *[
            f"{MATRIX}[responses:provider.max_price.completion:{fmt}]"
            for fmt in ("openai-responses", "openai-chat", "anthropic-messages")
        ],
    ],
    "provider.max_price.image": [f"{INVALID}[provider.max_price.image]"],
    "provider.max_price.prompt": [
        f"{ROUTING}::test_max_price_per_million_tokens",
        *[
            f"{MATRIX}[responses:provider.max_price.prompt:{fmt}]"
            for fmt in ("openai-responses", "openai-chat", "anthropic-messages")
        ],
    ],
    "provider.max_price.request": [
        f"{ROUTING}::test_max_price_per_request_compares_the_fixed_fee",
        *[
            f"{MATRIX}[responses:provider.max_price.request:{fmt}]"
            for fmt in ("openai-responses", "openai-chat", "anthropic-messages")
        ],
    ],
    "provider.only": [
        f"{ROUTING}::test_only_and_ignore",
        *[
            f"{MATRIX}[responses:provider.only:{fmt}]"
            for fmt in ("openai-responses", "openai-chat", "anthropic-messages")
        ],
    ],
    "provider.order": [f"{ROUTING}::test_order_puts_providers_first"],
    "provider.preferred_max_latency": [f"{INVALID}[provider.preferred_max_latency]"],
    "provider.preferred_min_throughput": [f"{INVALID}[provider.preferred_min_throughput]"],
    "provider.quantizations": [f"{INVALID}[provider.quantizations]"],
    "provider.require_parameters": [f"{ROUTING}::test_require_parameters"],
    "provider.sort": [f"{ROUTING}::test_sort_partition_none_and_route_alias", f"{INVALID}[provider.sort1]"],
    "provider.sort.by": [f"{ROUTING}::test_sort_partition_none_and_route_alias", f"{INVALID}[provider.sort.by]"],
    "provider.sort.partition": [f"{ROUTING}::test_sort_partition_none_and_route_alias"],
    "provider.zdr": [
        f"{ROUTING}::test_data_collection_deny_and_zdr",
        *[
            f"{MATRIX}[responses:provider.zdr:{fmt}]"
            for fmt in ("openai-responses", "openai-chat", "anthropic-messages")
        ],
    ],
    "reasoning": [f"{FE}[reasoning.effort]"],
    "repetition_penalty": [
        f"{PARAMS}::test_router_parameter_on_responses[repetition_penalty]",
        f"{PARAMS}::{ROUTED}[repetition_penalty]",
    ],
    "reasoning.effort": [f"{FE}[reasoning.effort]", f"{FE}[reasoning.effort-chat]"],
    "reasoning.enabled": [f"{FE}[reasoning.enabled]"],
    "reasoning.max_tokens": [f"{FE}[reasoning.max_tokens-anthropic]"],
    "reasoning.summary": [f"{FE}[reasoning.effort]"],
    "route": [f"{ROUTING}::test_sort_partition_none_and_route_alias"],
    "safety_identifier": [f"{IDENTITY}[safety_identifier]"],
    "service_tier": [f"{FE}[service_tier]"],
    "session_id": [
        f"{ROUTING}::test_sticky_session_tries_last_endpoint_first",
        "tests/inference/test_responses.py::test_generation_row_for_stream_and_session_header",
    ],
    "stop_server_tools_when": [STOP],
    "stop_server_tools_when[].max_cost_in_dollars": [STOP],
    "stop_server_tools_when[].max_tokens": [STOP],
    "stop_server_tools_when[].reason": [STOP],
    "stop_server_tools_when[].step_count": [STOP],
    "stop_server_tools_when[].tool_name": [STOP],
    "stop_server_tools_when[].type": [STOP],
    "store": [f"{INVALID}[store0]"],  # only false: the gateway stores no responses
    "stream": ["tests/inference/test_responses.py::test_sdk_create_stream_true_event_order"],
    "stream_options": [STREAM_OPTIONS, f"{INVALID}[stream_options.chunk_size]"],
    "stream_options.include_obfuscation": [STREAM_OPTIONS, f"{INVALID}[stream_options.include_obfuscation]"],
    "stream_options.include_usage": [STREAM_OPTIONS],
    "temperature": [f"{FE}[temperature]"],
    "text": FORMAT,
    "text.format": FORMAT,
    "text.format.name": FORMAT,
    "text.format.schema": FORMAT,
    "text.format.strict": FORMAT,
    "text.format.type": [*FORMAT, f"{FE}[text.format.json_object-chat]"],
    "text.verbosity": [f"{FE}[text.verbosity]"],
    "tool_choice": [f"{FE}[tool_choice]"],
    "tool_choice.type": [
        f"{FE}[tool_choice.type]",
        f"{LOOP}::test_tool_choice_naming_a_server_tool_forces_its_function",
    ],
    "tools": TOOLS,
    "tools[].defer_loading": [
        "tests/servertools/test_tool_search.py::test_deferred_tools_are_withheld_found_and_offered_next_turn"
    ],
    "tools[].description": TOOLS,
    "tools[].name": TOOLS,
    "tools[].parameters": TOOLS,
    "tools[].strict": TOOLS,
    "tools[].type": TOOLS,
    "tools[type=service:tool_search]": [
        "tests/servertools/test_tool_search.py::test_deferred_tools_are_withheld_found_and_offered_next_turn"
    ],
    "tools[type=service:web_fetch]": ["tests/servertools/test_web_fetch.py::test_model_fetches_a_page_and_cites_it"],
    "tools[type=service:web_search]": [
        "tests/servertools/test_web_search.py::test_json_search_then_answer_with_citation"
    ],
    "top_a": [f"{PARAMS}::test_router_parameter_on_responses[top_a]", f"{PARAMS}::{ROUTED}[top_a]"],
    "top_k": [f"{FE}[top_k]", f"{FE}[top_k-anthropic]", f"{OMITTED}[top_k-responses]"],
    "top_logprobs": [f"{FE}[top_logprobs]", f"{FE}[top_logprobs-chat]"],
    "top_p": [f"{FE}[top_p]"],
    "trace": ["tests/observability/test_end_to_end.py::test_a_response_reaches_the_webhook_and_the_otlp_collector"],
    "transforms": [
        f"{PARAMS}::test_usage_and_transforms_on_responses",
        f"{PARAMS}::test_transforms_middle_out_is_the_context_compression_plugin",
    ],
    "truncation": [f"{FE}[truncation]", f"{REFUSED}[truncation-anthropic]"],
    "usage": [
        f"{PARAMS}::test_usage_and_transforms_on_responses",
        f"{PARAMS}::test_usage_include_as_litellm_openrouter_sends_it",
    ],
    "usage.include": [
        f"{PARAMS}::test_usage_and_transforms_on_responses",
        f"{PARAMS}::test_usage_include_false_removes_nothing",
    ],
    "user": [f"{IDENTITY}[user]"],
}
