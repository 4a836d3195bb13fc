"""Requirements manifest: spec-conformance.md items on initialization, session setup and the prompt turn.

Scope (:data:`SCOPE`): every item of §C (initialization), §E (session setup), §F (session list and
delete), §G (prompt turn) and §H (cancellation), plus the items of other sections whose source is
one of those pages: A.11 and A.12 (prompt-turn.mdx) and the §P conflicts 227, 230, 232, 233.

Each ID maps to the tests that show acpio enforces it or makes it easy (``module::test``, relative
to ``tests/``), or to ``OUT: reason`` when an SDK cannot enforce it. ``test_manifest.py`` checks that
the mapping covers the scope, that every named test exists, and that none is an expected failure
(``xfail``): a requirement counts only once acpio meets it.
"""

from __future__ import annotations

SECTIONS = {
    "C": range(30, 49),
    "E": range(63, 94),
    "F": range(94, 109),
    "G": range(109, 122),
    "H": range(122, 138),
}
EXTRA = (11, 12, 227, 230, 232, 233)
SCOPE: frozenset[int] = frozenset({n for r in SECTIONS.values() for n in r} | set(EXTRA))

I = "interaction/test_initialization.py::"  # noqa: E741
S = "interaction/test_session_setup.py::"
P = "interaction/test_prompt_turn.py::"
L = "interaction/test_session_list.py::"
# The agent side of the session methods, served from a session store (acpio.store), every store.
ST = "store/test_serve.py::"
STORE = "store/test_store.py::"

BIZ = "OUT: the agent's business logic"
UI = "OUT: the client application's user interface"

REQUIREMENTS: dict[int, str | tuple[str, ...]] = {
    11: (
        P + "test_builder_cancel_is_a_notification_and_late_updates_precede_cancelled",
        P + "test_compat_cancel_reaches_the_running_turn_and_late_updates_precede_cancelled",
    ),
    12: (
        P + "test_builder_turn_updates_precede_the_stop_reason_and_turns_follow_each_other",
        P + "test_compat_every_update_is_handled_before_prompt_returns",
    ),
    # --- C. initialization
    30: (
        I + "test_compat_session_methods_before_initialize_are_refused",
        I + "test_builder_session_before_initialize_is_refused",
    ),
    31: (I + "test_builder_initialize_on_the_wire_and_the_agreed_version",),
    32: (I + "test_builder_initialize_on_the_wire_and_the_agreed_version",),
    33: (I + "test_builder_initialize_on_the_wire_and_the_agreed_version",),
    34: (I + "test_builder_initialize_on_the_wire_and_the_agreed_version",),
    35: (I + "test_agent_answers_the_requested_version_or_its_latest_as_a_result",),
    36: (I + "test_agent_answers_the_requested_version_or_its_latest_as_a_result",),
    37: (
        I + "test_builder_client_closes_on_a_version_it_does_not_speak",
        I + "test_trait_client_closes_on_a_version_it_does_not_speak",
    ),
    38: (I + "test_builder_initialize_on_the_wire_and_the_agreed_version",),
    39: (I + "test_builder_initialize_on_the_wire_and_the_agreed_version",),
    40: (I + "test_omitted_and_null_capabilities_are_unsupported_and_empty_objects_are_supported",),
    41: (I + "test_omitted_and_null_capabilities_are_unsupported_and_empty_objects_are_supported",),
    42: (I + "test_omitted_and_null_capabilities_are_unsupported_and_empty_objects_are_supported",),
    43: (I + "test_omitted_and_null_capabilities_are_unsupported_and_empty_objects_are_supported",),
    44: (I + "test_compat_agent_reads_client_capabilities_from_the_initialize_request",),
    45: (I + "test_builder_initialize_on_the_wire_and_the_agreed_version",),
    46: (
        I + "test_baseline_methods_and_content_are_never_gated",
        P + "test_builder_refuses_prompt_content_the_agent_did_not_advertise",
    ),
    47: (I + "test_baseline_methods_and_content_are_never_gated",),
    48: (I + "test_custom_capabilities_in_meta_reach_the_peer",),
    # --- E. session setup
    63: (
        I + "test_compat_session_methods_before_initialize_are_refused",
        I + "test_builder_session_before_initialize_is_refused",
    ),
    64: (
        S + "test_builder_session_new_sends_an_absolute_cwd_and_an_empty_mcp_servers_list",
        S + "test_compat_session_new_sends_mcp_servers_even_when_empty",
        S + "test_session_setup_requests_require_their_fields",
    ),
    65: (STORE + "test_ids_are_unique_and_a_taken_id_is_refused",),
    66: (
        S + "test_builder_refuses_load_resume_close_the_agent_did_not_advertise",
        S + "test_compat_refuses_load_resume_close_the_agent_did_not_advertise",
    ),
    67: (
        S + "test_builder_refuses_load_resume_close_the_agent_did_not_advertise",
        S + "test_builder_sends_load_resume_close_when_advertised",
        S + "test_compat_refuses_load_resume_close_the_agent_did_not_advertise",
    ),
    68: (S + "test_session_setup_requests_require_their_fields",),
    69: (
        ST + "test_load_replays_every_update_as_sent_then_answers",
        "store/test_processes.py::test_sigkill_mid_turn_loses_nothing_already_sent",
    ),
    70: (
        S + "test_builder_load_replay_reaches_the_session_in_order_before_the_answer",
        S + "test_compat_load_replay_is_handled_before_load_session_returns",
        ST + "test_load_replays_every_update_as_sent_then_answers",
    ),
    71: (
        S + "test_builder_load_replay_reaches_the_session_in_order_before_the_answer",
        S + "test_compat_load_replay_is_handled_before_load_session_returns",
    ),
    72: BIZ + " (messageId values during replay)",
    73: (
        S + "test_builder_refuses_load_resume_close_the_agent_did_not_advertise",
        S + "test_compat_refuses_load_resume_close_the_agent_did_not_advertise",
    ),
    74: (
        S + "test_builder_refuses_load_resume_close_the_agent_did_not_advertise",
        S + "test_builder_sends_load_resume_close_when_advertised",
    ),
    75: (S + "test_resume_sends_mcp_servers_even_when_not_given",),
    76: (ST + "test_resume_replays_nothing",),
    77: (S + "test_a_null_load_result_is_read_as_empty_and_modes_are_read",),
    78: (
        S + "test_builder_refuses_load_resume_close_the_agent_did_not_advertise",
        S + "test_compat_refuses_load_resume_close_the_agent_did_not_advertise",
    ),
    79: (
        S + "test_builder_refuses_load_resume_close_the_agent_did_not_advertise",
        S + "test_builder_sends_load_resume_close_when_advertised",
    ),
    80: (ST + "test_close_calls_the_hook_and_keeps_the_session",),
    81: (ST + "test_unknown_ids_get_the_spec_errors",),
    82: (S + "test_mcp_transports_and_additional_directories_need_their_capabilities",),
    83: (S + "test_relative_paths_are_refused_before_anything_is_sent",),
    84: "OUT: root-set semantics are agent and client-application state; acpio sends what it is given",
    85: (
        S + "test_builder_session_new_sends_an_absolute_cwd_and_an_empty_mcp_servers_list",
        S + "test_relative_paths_are_refused_before_anything_is_sent",
    ),
    86: BIZ + " (using cwd as the session directory)",
    87: BIZ + " (resolving relative paths against cwd)",
    88: BIZ + " (file-system boundaries of its tools)",
    89: (S + "test_stdio_mcp_servers_require_env",),
    90: BIZ + " (which MCP transports it implements)",
    91: (S + "test_mcp_transports_and_additional_directories_need_their_capabilities",),
    92: BIZ + " (connecting to the MCP servers)",
    93: (
        S + "test_relative_paths_are_refused_before_anything_is_sent",
        S + "test_mcp_transports_and_additional_directories_need_their_capabilities",
    ),
    # --- F. session list and delete
    94: (L + "test_builder_refuses_list_and_delete_the_agent_did_not_advertise",),
    95: (L + "test_stored_sessions_list_as_the_spec_says",),
    96: (
        L + "test_stored_sessions_list_as_the_spec_says",
        ST + "test_list_pages_filters_and_omits_deleted_sessions",
    ),
    97: (L + "test_stored_sessions_list_as_the_spec_says", ST + "test_list_pages_with_a_cursor"),
    98: (L + "test_stored_sessions_list_as_the_spec_says",),
    99: "OUT: the client application's paging loop (acpio hands over nextCursor as the agent sent it)",
    100: "OUT: the client application's use of cursors (acpio neither parses nor rewrites them)",
    101: (L + "test_stored_sessions_list_as_the_spec_says", ST + "test_list_pages_with_a_cursor"),
    102: (L + "test_stored_sessions_list_as_the_spec_says",),
    103: "OUT: the client application's state (acpio keeps no roots of its own)",
    104: (L + "test_session_info_update_fields_are_partial_and_null_clears",),
    105: (L + "test_stored_sessions_list_as_the_spec_says",),
    106: (
        L + "test_builder_refuses_list_and_delete_the_agent_did_not_advertise",
        L + "test_builder_sends_list_and_delete_when_advertised",
    ),
    107: (L + "test_a_deleted_session_is_gone_and_deleting_again_succeeds",),
    108: (
        L + "test_a_deleted_session_is_gone_and_deleting_again_succeeds",
        ST + "test_unknown_ids_get_the_spec_errors",
    ),
    # --- G. prompt turn
    109: (
        I + "test_compat_session_methods_before_initialize_are_refused",
        P + "test_compat_prompt_before_initialize_is_refused",
        I + "test_builder_session_before_initialize_is_refused",
    ),
    110: (
        P + "test_builder_refuses_prompt_content_the_agent_did_not_advertise",
        P + "test_builder_sends_advertised_prompt_content",
        P + "test_compat_refuses_prompt_content_the_agent_did_not_advertise",
    ),
    111: (P + "test_builder_refuses_prompt_content_the_agent_did_not_advertise",),
    112: (
        P + "test_builder_refuses_prompt_content_the_agent_did_not_advertise",
        P + "test_compat_refuses_prompt_content_the_agent_did_not_advertise",
    ),
    113: UI + " (rendering Markdown)",
    114: (
        P + "test_builder_turn_updates_precede_the_stop_reason_and_turns_follow_each_other",
        P + "test_compat_every_update_is_handled_before_prompt_returns",
    ),
    115: (P + "test_session_update_kinds_carry_their_discriminator_and_unknown_kinds_are_kept",),
    116: "OUT: messageId choice is the agent's; grouping chunks into messages is the client application's",
    117: (P + "test_session_update_kinds_carry_their_discriminator_and_unknown_kinds_are_kept",),
    118: (P + "test_builder_turn_updates_precede_the_stop_reason_and_turns_follow_each_other",),
    119: BIZ + " (when to stop a turn)",
    120: UI + " (showing a refusal)",
    121: (P + "test_builder_turn_updates_precede_the_stop_reason_and_turns_follow_each_other",),
    # --- H. cancellation
    122: (
        P + "test_builder_cancel_is_a_notification_and_late_updates_precede_cancelled",
        P + "test_compat_cancel_reaches_the_running_turn_and_late_updates_precede_cancelled",
    ),
    123: UI + " (marking tool calls cancelled)",
    124: (
        P + "test_cancel_answers_pending_permission_requests_cancelled",
        P + "test_builder_session_cancel_answers_pending_permission_requests_cancelled",
        P + "test_builder_handler_permission_request_is_answered_cancelled_and_its_work_stopped",
        P + "test_cancel_leaves_answered_permission_requests_and_other_sessions_alone",
    ),
    125: BIZ + " (stopping model requests and tools)",
    126: (
        P + "test_builder_cancel_is_a_notification_and_late_updates_precede_cancelled",
        P + "test_compat_cancel_reaches_the_running_turn_and_late_updates_precede_cancelled",
    ),
    127: BIZ + " (catching the abort's exceptions and still answering cancelled)",
    128: (
        P + "test_builder_cancel_is_a_notification_and_late_updates_precede_cancelled",
        P + "test_compat_cancel_reaches_the_running_turn_and_late_updates_precede_cancelled",
    ),
    129: (
        P + "test_builder_cancel_is_a_notification_and_late_updates_precede_cancelled",
        P + "test_compat_cancel_reaches_the_running_turn_and_late_updates_precede_cancelled",
    ),
    130: (P + "test_cancel_request_for_a_pending_prompt_gets_exactly_one_answer",),
    131: ("jsonrpc/test_cancellation.py::test_unknown_and_malformed_cancels_are_ignored_without_reply",),
    132: ("jsonrpc/test_cancellation.py::test_run_until_cancelled_stops_the_work_and_answers_minus_32800",),
    133: (
        P + "test_cancel_request_for_a_pending_prompt_gets_exactly_one_answer",
        "jsonrpc/test_cancellation.py::test_cancellation_seen_late_is_already_set_and_reply_is_exactly_one",
    ),
    134: "OUT: internal cancellation (timeouts, an IDE closing) is the application's decision",
    135: ("jsonrpc/test_cancellation.py::test_unknown_and_malformed_cancels_are_ignored_without_reply",),
    136: ("traits/test_turn.py::test_cancel_request_cancels_the_handler_task",),
    137: (P + "test_cancel_request_for_a_pending_prompt_gets_exactly_one_answer",),
    # --- P. conflicts on these pages
    227: (S + "test_a_null_load_result_is_read_as_empty_and_modes_are_read",),
    230: (I + "test_compat_agent_reads_client_capabilities_from_the_initialize_request",),
    232: (S + "test_stdio_mcp_servers_require_env", S + "test_resume_sends_mcp_servers_even_when_not_given"),
    233: (
        I + "test_baseline_methods_and_content_are_never_gated",
        P + "test_builder_refuses_prompt_content_the_agent_did_not_advertise",
    ),
}
