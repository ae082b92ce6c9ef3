"""The bounds of the extension: every limit on what callers can hold, by count, bytes and principal.

A mixin of the extension app (configured as ``JupyterPairMCP.<name>``), kept apart from the wiring so
that docs/security.md's limits table and this module can be read side by side.
"""

from __future__ import annotations

from traitlets import Float, Int
from traitlets.config import Configurable


class Limits(Configurable):
    """Bounds on sessions, events, subscriptions, history, forks, executions and request rates."""

    max_sessions = Int(
        1000,
        help="""Maximum number of concurrent MCP sessions; a request that would open one more is
        answered 503 until a session ends. 0 removes the limit. Default: 1000.""",
    ).tag(config=True)

    event_store_max_events_per_stream = Int(
        1000,
        help="""Resumability: events kept per SSE stream for replay after a reconnect
        (Last-Event-ID); older ones are dropped first. Default: 1000.""",
    ).tag(config=True)

    event_store_max_streams = Int(
        1000,
        help="""Resumability: SSE streams kept in memory across all sessions; the least recently
        written is dropped first. Default: 1000.""",
    ).tag(config=True)

    event_store_max_age = Float(
        600.0,
        help="""Resumability: seconds an event stays replayable. Default: 600 (10 minutes).""",
    ).tag(config=True)

    event_store_max_event_bytes = Int(
        4 * 1024 * 1024,
        help="""Resumability: an event (a result, a notification) larger than this many bytes of JSON is
        delivered but not kept for replay; a client resuming past it is told the result was not kept.
        Default: 4 MiB.""",
    ).tag(config=True)

    event_store_max_session_bytes = Int(
        64 * 1024 * 1024,
        help="""Resumability: bytes of events kept for one MCP session; past it its oldest events are
        dropped. Default: 64 MiB.""",
    ).tag(config=True)

    event_store_max_bytes = Int(
        256 * 1024 * 1024,
        help="""Resumability: bytes of events kept for all sessions together; past it the oldest events
        of the least recently written streams are dropped. Default: 256 MiB.""",
    ).tag(config=True)

    task_ttl = Float(
        3600.0,
        help="""MCP tasks (long runs a client polls by id): seconds a task's result is kept from its
        creation; a client may ask for less, not more. A running task is kept until it ends. Default: 3600.""",
    ).tag(config=True)

    max_tasks = Int(
        1000,
        help="""MCP tasks kept for all callers together; past it the oldest finished one is dropped, and a
        new task is refused while every kept task is still running. 0 removes the limit. Default: 1000.""",
    ).tag(config=True)

    max_tasks_per_principal = Int(
        64,
        help="""MCP tasks kept for one credential; past it its oldest finished task is dropped, and a new
        task is refused while all of them are still running. 0 removes the limit. Default: 64.""",
    ).tag(config=True)

    task_max_bytes = Int(
        64 * 1024 * 1024,
        help="""Bytes of MCP task results kept for all callers together; past it the oldest finished tasks
        are dropped. Default: 64 MiB.""",
    ).tag(config=True)

    task_max_principal_bytes = Int(
        16 * 1024 * 1024,
        help="""Bytes of MCP task results kept for one credential; past it its oldest finished tasks are
        dropped, and a larger result is replaced by an error saying so. Default: 16 MiB.""",
    ).tag(config=True)

    max_request_body_size = Int(
        4 * 1024 * 1024,
        help="""Largest accepted request body in bytes; larger requests are answered 413 before the
        body is read. Default: 4194304 (4 MiB).""",
    ).tag(config=True)

    max_subscriptions_per_session = Int(
        100,
        help="""Resource subscriptions one MCP session (or one 2026-07-28 subscriptions/listen stream) may
        hold at once. Default: 100.""",
    ).tag(config=True)

    max_listen_streams_per_principal = Int(
        16,
        help="""subscriptions/listen streams (2026-07-28) one credential may hold open at once; one more is
        refused with an error. Default: 16.""",
    ).tag(config=True)

    max_history_updates = Int(
        10000,
        help="""Stored updates kept per document for history (every transaction is one: a keystroke, an
        agent edit, an output write). Past the bound the oldest are squashed into one base version,
        so history cannot grow without limit. 0: unbounded. Default: 10000.""",
    ).tag(config=True)

    max_history_cache_bytes = Int(
        64 * 1024 * 1024,
        help="""Bytes of memory the per-document version lists kept for get_document_history may take (about
        1 KB per stored update: each carries who made it and a summary; the newest documents read are kept).
        Past it the least recently read documents' lists are dropped and read again from the store when
        needed. Default: 64 MiB.""",
    ).tag(config=True)

    max_replica_bytes = Int(
        64 * 1024 * 1024,
        help="""Encoded bytes the copies of big notebooks kept in the copy worker process (see scan_processes)
        may take together. A copy is fed its room's changes so that a save reads it and encodes nothing on the
        event loop; it takes ~23 times its encoded size of that process's memory (a 100 000-cell notebook of
        code cells: 24.6 MB encoded, 563 MB). Past the bound the least recently saved or edited copy is
        dropped, and its room is saved as without a copy (encoded on the loop, ~2.5 ns a byte), which copies
        it again; a notebook past the bound alone gets no copy. Copies are past 512 KiB each, so at most
        max_replica_bytes / 512 KiB are kept. 0: no bound. Default: 64 MiB (~1.5 GB of that process's memory
        at most).""",
    ).tag(config=True)

    max_forks = Int(
        20,
        help="""Forks (fork_document) the server holds at once; beyond it new forks are refused until some are
        merged or discarded. 0: unlimited. Default: 20.""",
    ).tag(config=True)

    fork_ttl = Float(
        3600.0,
        help="""Seconds a fork may stay unused before it is discarded. 0: never. Default: 3600.""",
    ).tag(config=True)

    max_activity_entries = Int(
        1000,
        help="""Agent activities (edits, executions, broadcasts) kept in memory for get_user_activity; the
        oldest are dropped first. Default: 1000.""",
    ).tag(config=True)

    max_stopped_agents = Int(
        1000,
        help="""Agents people may keep stopped at once (each in one document; at most 64 in one document); past
        it a stop is refused until some are allowed again. Default: 1000.""",
    ).tag(config=True)

    max_revision_bytes = Int(
        64 * 1024 * 1024,
        help="""Bytes of memory the cell and document texts kept so that an agent's edit can be merged from
        the text it read (its base_revision, or the last one served to it) onto the live text may take, as
        Python holds them (a text with one emoji costs 4 bytes a character). Least recently used texts are
        dropped past this; an edit from a dropped text is refused unless the text has not changed.
        Default: 64 MiB.""",
    ).tag(config=True)

    max_read_memory_per_principal = Int(
        4 * 1024 * 1024,
        help="""Bytes one credential's memory of which revision it was last served of each cell and text
        document may take (also at most 10000 entries); an edit without base_revision is based on it. Least
        recently used entries are dropped past this; after that, an edit without base_revision of a text this
        memory no longer knows is refused with the live text and its revision. Default: 4 MiB.""",
    ).tag(config=True)

    max_resource_length = Int(
        100_000,
        help="""Characters of text one resources/read returns (a notebook's sources and output texts, a text
        document); a longer read is cut and says what it left out and which tool call reads on (get_notebook
        from a cell index, get_document from an offset). Images of a cell read follow max_images_per_result,
        max_image_bytes and max_image_bytes_total. Default: 100000 (as the tools' max_content_length).""",
    ).tag(config=True)

    max_sessions_per_principal = Int(
        100,
        help="""Maximum number of concurrent MCP sessions one credential (token, or user for cookie logins)
        may hold; a request that would open one more is answered 503 naming the limit, until one of its
        sessions ends. 0 removes the limit. Default: 100.""",
    ).tag(config=True)

    max_suggestions_per_document = Int(
        20,
        help="""Pending suggestions (review mode, docs/review.md) one document may have at once; past it a
        new proposal is refused until people accept or reject some, except a credential's own share
        (suggestion_share_per_document). 0 removes the limit. Default: 20.""",
    ).tag(config=True)

    suggestion_share_per_document = Int(
        8,
        help="""Pending suggestions on one document every credential may have whatever others have: below
        it, its proposals are not refused for max_suggestions_per_document, so one agent cannot lock the
        others out of a document until a person decides. 0: no share. Default: 8.""",
    ).tag(config=True)

    max_suggestion_bytes_per_principal = Int(
        64 * 2**20,
        help="""Bytes of memory one credential's pending suggestions may hold (the text of the cells they
        change, before and after; a text document's text, before and after); past it a proposal is refused.
        0 removes the limit. Default: 67108864 (64 MiB).""",
    ).tag(config=True)

    max_suggestion_bytes = Int(
        256 * 2**20,
        help="""Bytes of memory all pending suggestions on the server may hold; past it a proposal is
        refused. 0 removes the limit. Default: 268435456 (256 MiB).""",
    ).tag(config=True)

    max_suggestions_per_principal = Int(
        50,
        help="""Pending suggestions one credential may have at once, over all documents; past it its new
        proposals are refused. 0 removes the limit. Default: 50.""",
    ).tag(config=True)

    suggestion_ttl = Float(
        86400.0,
        help="""Seconds a suggestion may stay pending before it expires (its agent is notified and reads
        "expired" with get_suggestion). 0: never. Default: 86400 (a day).""",
    ).tag(config=True)

    max_forks_per_user = Int(
        10,
        help="""Forks one user may hold at once (within max_forks for the server); past it a new fork is
        refused until one of theirs is merged, discarded or expires. 0 removes the limit. Default: 10.""",
    ).tag(config=True)

    max_executions_per_principal = Int(
        64,
        help="""Cell runs one credential may have in flight at once (each waits its turn in its kernel's
        queue); past it an execution is refused with a tool error until one ends. 0 removes the limit.
        Default: 64 (a hundred agent sessions running cells now and then stay well below it).""",
    ).tag(config=True)

    rate_limit = Float(
        500.0,
        help="""Requests per second one credential may make to the endpoint, sustained (a token bucket);
        beyond it requests are answered 429 with Retry-After. Far above what one client calling one call
        after another reaches, so only floods meet it. 0 disables rate limiting. Default: 500.""",
    ).tag(config=True)

    rate_limit_burst = Int(
        1000,
        help="""Requests one credential may make at once before rate_limit applies (the bucket's size).
        Default: 1000.""",
    ).tag(config=True)
