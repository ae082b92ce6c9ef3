"""The Jupyter server extension: configuration and wiring, no behaviour.

Everything the endpoint needs is built once here and hangs off this object (tests run several
servers in one process, so nothing lives in module globals).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_core.paths import jupyter_data_dir, jupyter_path
from jupyter_server.auth.identity import IdentityProvider, PasswordIdentityProvider
from jupyter_server.extension.application import ExtensionApp
from jupyter_server.utils import url_path_join
from traitlets import Bool, Enum, Float, Int, List, TraitError, Unicode, validate

from jupyter_pair_mcp._version import __version__
from jupyter_pair_mcp.adapters.contents.adapter import ContentsAdapter
from jupyter_pair_mcp.adapters.jupyterai import MODES, JupyterAI, toolkit_problem
from jupyter_pair_mcp.adapters.kernels.adapter import KernelsAdapter
from jupyter_pair_mcp.adapters.rooms import RoomsAdapter, linear_ydoc
from jupyter_pair_mcp.groups import GROUPS
from jupyter_pair_mcp.heap import HeapTrim, freeze_startup_heap
from jupyter_pair_mcp.limits import Limits
from jupyter_pair_mcp.protocol.subscriptions import SubscriptionManager
from jupyter_pair_mcp.services.activity import ActivityLog, disk_merge
from jupyter_pair_mcp.services.actors import Actors
from jupyter_pair_mcp.services.audit import AuditTrail
from jupyter_pair_mcp.services.execution import ExecutionService
from jupyter_pair_mcp.services.forks import ForkService
from jupyter_pair_mcp.services.grants import GrantStore
from jupyter_pair_mcp.services.history import HistoryService
from jupyter_pair_mcp.services.jupyterai import CHAT_STOPPED, JupyterAIAccess, local_url
from jupyter_pair_mcp.services.presence import PresenceService
from jupyter_pair_mcp.services.show import ShowRequests
from jupyter_pair_mcp.services.steering import Steering
from jupyter_pair_mcp.services.stops import STOPS_FILE, Stops
from jupyter_pair_mcp.services.suggestion_bounds import SuggestionBounds
from jupyter_pair_mcp.services.suggestions import SuggestionService
from jupyter_pair_mcp.transport.exitguard import install as install_exit_guard
from jupyter_pair_mcp.transport.grants import handlers as grant_handlers
from jupyter_pair_mcp.transport.handlers import MCPHandler
from jupyter_pair_mcp.transport.health import handlers as health_handlers
from jupyter_pair_mcp.transport.hub import hub_server
from jupyter_pair_mcp.transport.oauth import oauth_handlers
from jupyter_pair_mcp.transport.ratelimit import RateLimiter
from jupyter_pair_mcp.transport.rest import handlers as rest_handlers
from jupyter_pair_mcp.transport.review import handlers as review_handlers
from jupyter_pair_mcp.transport.revocation import GrantEnder
from jupyter_pair_mcp.transport.show import handlers as show_handlers

if TYPE_CHECKING:  # the MCP SDK is imported when the endpoint is built, not with the extension
    from jupyter_pair_mcp.protocol.endpoint import Endpoint
    from jupyter_pair_mcp.protocol.event_store import MemoryEventStore
    from jupyter_pair_mcp.protocol.oauth import AuthorizationServer
    from jupyter_pair_mcp.protocol.sessions import ManagerRunner


#: Name of the JupyterLab extension (package.json), the folder it is installed under.
LABEXTENSION = "jupyter-pair-mcp"


def labextension_found(package_dir: Path, data_paths: list[str]) -> bool:
    """Whether the JupyterLab extension was built: in the package (a clone built by ``pip install -e``) or
    installed in a Jupyter data path (a wheel). Without Node the build is skipped and neither holds."""
    if (package_dir / "labextension" / "package.json").is_file():
        return True
    return any((Path(path) / LABEXTENSION / "package.json").is_file() for path in data_paths)


class JupyterPairMCP(Limits, ExtensionApp):
    """Serves a Model Context Protocol endpoint at ``{base_url}mcp`` on the Jupyter server."""

    name = "jupyter_pair_mcp"
    description = "MCP endpoint for AI agents working in live, collaborative notebooks."
    load_other_extensions = True
    version = __version__
    _linear_ydoc = False  # whether this server put the linear notebook load on jupyter_ydoc (undone at stop)

    tool_groups = List(
        Unicode(),
        default_value=list(GROUPS),
        help="""Tool groups to expose, from: notebook, execution, document, history, awareness.
        Default: all of them. Remove a group to hide all its tools from every client.""",
    ).tag(config=True)

    read_only = Bool(
        False,
        help="""Expose only tools that cannot change anything (reads, listings, searches).
        Default: False.""",
    ).tag(config=True)

    review_mode = Bool(
        False,
        help="""Review mode for every agent: each edit of the notebook and text edit tools becomes a
        suggestion that people accept or reject, cell by cell, and the live document is untouched until
        they do (docs/review.md); edit tools that cannot propose are refused. A person can also turn it on
        for agents acting with their own Jupyter identity (PUT api/mcp/review). Default: False.""",
    ).tag(config=True)

    output_schemas = Bool(
        False,
        help="""List each tool's output schema in tools/list. Results carry structured content (JSON)
        either way; the schemas add about 27 KB to the tool list every agent reads, and SDK clients
        that validate results against them spend 1-4 s on their first tool call building the
        validator. Default: False.""",
    ).tag(config=True)

    session_idle_timeout = Float(
        1800.0,
        help="""Seconds after which an MCP session with no request in flight and no open stream is
        closed; its id then answers 404 and the client starts a new session. 0 disables the
        timeout. Default: 1800 (30 minutes).""",
    ).tag(config=True)

    sse_retry_interval = Int(
        1000,
        help="""Milliseconds a client should wait before reconnecting a closed SSE stream (sent as
        the SSE 'retry:' field). Default: 1000.""",
    ).tag(config=True)

    shutdown_timeout = Float(
        5.0,
        help="""Seconds the extension's part of a server stop takes: every MCP session, stream and
        call in flight is ended (within half of it), then every open document with changes not on
        disk yet is written, big notebooks included. A document still being written when it runs out
        is waited for, up to 30 s more, with a warning naming it: an edit lost is worse than a late
        stop. Default: 5.""",
    ).tag(config=True)

    allow_symlinks_outside_root = Bool(
        False,
        help="""Let tools follow symbolic links that lead outside the Jupyter root. Default: False
        (such paths are refused, although Jupyter's contents manager would follow them).""",
    ).tag(config=True)

    max_listed_directories = Int(
        2000,
        help="""Most directories one listing tool call walks before it reports a truncated result.
        Default: 2000.""",
    ).tag(config=True)

    max_output_length = Int(
        2000,
        help="""Characters of each cell output returned to agents; longer outputs are cut with a
        marker saying how much was cut. Default: 2000.""",
    ).tag(config=True)

    include_images = Bool(
        True,
        help="""Return PNG and JPEG outputs of executed cells to agents as MCP image content (besides
        the text marker in the structured result). Default: True.""",
    ).tag(config=True)

    max_images_per_result = Int(
        8,
        help="""Images one tool result returns as MCP image content at most; the rest are counted in the
        result's images report. Default: 8.""",
    ).tag(config=True)

    max_image_bytes = Int(
        1 << 20,
        help="""Largest image (base64 characters) returned as MCP image content; a larger one is left out and
        counted in the result's images report. Default: 1048576 (1 MiB).""",
    ).tag(config=True)

    max_image_bytes_total = Int(
        4 << 20,
        help="""Base64 characters of images one tool result returns at most, all images together.
        Default: 4194304 (4 MiB).""",
    ).tag(config=True)

    room_idle_timeout = Float(
        600.0,
        help="""Seconds a collaboration room that no browser has open stays open after an agent's last
        call in it; then it is saved and closed (logged). This covers rooms an agent opened and rooms whose
        last browser left while an agent uses them (jupyter_server_ydoc would close those
        document_cleanup_delay after the browser left): an agent that pauses does not pay the open again.
        0 keeps such rooms open until the server stops. Default: 600 (10 minutes).""",
    ).tag(config=True)

    max_save_interval = Float(
        5.0,
        help="""Seconds at most between the first change of an open document not yet on disk and its write
        to the file, however often the document keeps changing (jupyter-collaboration saves
        document_save_delay after the last change only, so a document edited without pause was never
        written). A server killed without a chance to save (SIGKILL, out of memory) loses at most this
        window of edits plus the time a write takes. 0 leaves saving to jupyter-collaboration's delay.
        Default: 5.""",
    ).tag(config=True)

    scan_processes = Int(
        1,
        help="""Worker processes that read big notebooks whole for search, outline, replace and clearing
        outputs, so that converting every cell (pycrdt and json hold the GIL, ~40 ns per byte) does not
        stop the event loop. Spawned on first need; a notebook under 512 KiB encoded is read in the
        server's process. One more process keeps a copy of each open notebook over that size, fed its
        changes, which its saves read (~5.6 MB of that process's memory per 1,000 cells; bounded by
        max_replica_bytes). 0 reads every notebook in the server's process, copies none. Default: 1.""",
    ).tag(config=True)

    linear_notebook_load = Bool(
        True,
        help="""Open and save notebooks in collaboration rooms in time linear in their size: jupyter_ydoc
        inserts and reads cells by index, O(cells²) (a 100 000-cell notebook took 20 minutes to open). The
        override keeps jupyter_ydoc's results byte for byte, for every room of this server, and is used only
        with the jupyter_ydoc versions it was tested with. Default: True.""",
    ).tag(config=True)

    freeze_startup_heap = Bool(
        True,
        help="""Once the server has started, collect garbage once and freeze every object then alive (gc.freeze:
        ~280 000 in a server with JupyterLab), so that the garbage collector's full collections, which stop the
        event loop at unpredictable moments, walk only objects made since: under 100 agent sessions they held the
        loop 0.2-0.4 s each, and 0.1-0.16 s with it. Frozen objects are still freed when unreferenced; only a
        cycle among them is never collected. Default: True.""",
    ).tag(config=True)

    heap_trim_interval = Float(
        30.0,
        help="""Seconds between two times the server gives the memory it freed back to the system (glibc's
        malloc_trim, in a worker thread: a few milliseconds), done when MCP sessions end, the last time after
        the last one ended. glibc keeps freed memory for later allocations, one heap per thread: without this a
        long run of agents left the server's RSS hundreds of MB above what it held alive, after every session
        had ended. No effect on C libraries without malloc_trim. 0: never. Default: 30.""",
    ).tag(config=True)

    max_kept_rooms_size = Int(
        256 << 20,
        help="""Bytes the collaboration rooms kept open for agents (see room_idle_timeout) may hold together,
        measured as their encoded Yjs state (a document's memory is a few times that). Past it, the biggest
        kept rooms not used in the last minute are saved and closed first (logged); an agent's next call
        opens them again. 0: no bound. Default: 268435456 (256 MiB).""",
    ).tag(config=True)

    ystore_path = Unicode(
        "",
        help="""Absolute path of the SQLite database where collaboration rooms keep their update
        history, used when SQLiteYStore.db_path is not configured (jupyter-collaboration's default
        is a file in the server's working directory, and rooms opened without a browser ignore the
        configuration altogether). Default: "" (jupyter_pair_mcp/ystore.db in the Jupyter data
        directory).""",
    ).tag(config=True)

    notification_interval = Float(
        0.5,
        help="""Seconds between resource-updated notifications for one subscription: changes within
        an interval are coalesced into one notification. Default: 0.5.""",
    ).tag(config=True)

    history_fold_interval = Float(
        60.0,
        help="""Seconds: people's consecutive edits with shorter pauses between them are listed as one
        version in document history. Default: 60.""",
    ).tag(config=True)

    agent_name = Unicode(
        "",
        help="""Name people see for MCP agents in documents' awareness, history and activity, after the
        name of the Jupyter user whose credential the agent uses ("alice · <agent_name>"; the user's name is
        left out when Jupyter knows none, as for its default token users). Empty: the name the MCP client
        gives in its clientInfo (title, else name), or "AI agent" when it gives none. Default: "".""",
    ).tag(config=True)

    presence_timeout = Float(
        60.0,
        help="""Seconds without a call after which an agent with an open MCP session leaves the
        collaborator lists of the documents it worked in (it leaves at once when its session ends). It
        reappears on its next edit or cursor move. 0: stay until the session ends. Default: 60.""",
    ).tag(config=True)

    stateless_presence_timeout = Float(
        10.0,
        help="""Seconds after its last call ended after which an agent without an MCP session (a
        stateless, 2026-era client: no session end tells that it left) leaves the collaborator lists of
        the documents it worked in; a call still running keeps it there. 0: never by age (it stays until
        it sets itself offline). Default: 10.""",
    ).tag(config=True)

    typing_window = Float(
        3.0,
        help="""Seconds after a person's last keystroke in a document during which get_online_users says they
        are typing there (so an agent can keep out of their way). Default: 3.""",
    ).tag(config=True)

    stop_agents_users = List(
        Unicode(),
        default_value=[],
        help="""Jupyter usernames who may stop an agent in a document and allow it again (from JupyterLab, or
        POST api/mcp/agents/<key>/stop); they also need write permission on contents. Empty: anyone with
        write permission may. Default: [].""",
    ).tag(config=True)

    enable_grants = Bool(
        True,
        help="""Let MCP clients connect without a copied token: Jupyter is the endpoint's OAuth authorization
        server (metadata, dynamic client registration, authorization code with PKCE, refresh, revocation), and a
        person approves each client on a consent page behind Jupyter's login, choosing its level, folders and
        expiry (docs/authorization.md). Its tokens reach only the MCP endpoint. Default: True.""",
    ).tag(config=True)

    grants_only = Bool(
        False,
        help="""Make grants the only way in for agents: {base_url}mcp then refuses every credential that is not a
        grant's token (the server's own token and a login cookie, each the person's full key to the server; a
        JupyterHub token, a person's key too) with a 401 pointing at the endpoint's OAuth metadata, so a client
        that supports MCP authorization starts the grant flow. People keep using their login in the browser
        (JupyterLab, the consent page, api/mcp/*). Needs enable_grants. Default: False (the server's token also
        works on the endpoint, as before grants).""",
    ).tag(config=True)

    grants_path = Unicode(
        "",
        help="""Absolute path of the JSON file where grants and registered clients are kept (token hashes only,
        mode 0600). Default: "" (pair_mcp_grants.json in the Jupyter data directory; on a JupyterHub user's named
        server, pair_mcp_grants-<server name>.json: a user's servers share that directory, never grants; stops of
        grants' agents are kept beside it, as pair_mcp_stops.json or pair_mcp_stops-<server name>.json).""",
    ).tag(config=True)

    max_grants_per_person = Int(
        20,
        help="""Grants one person may hold at once; approving one more revokes their oldest. Default: 20.""",
    ).tag(config=True)

    grant_access_token_lifetime = Int(
        3600,
        help="""Seconds a grant's access token is valid; the client then uses its refresh token (which works
        once, and is replaced with each refresh) for a new pair. Default: 3600 (1 hour).""",
    ).tag(config=True)

    jupyter_ai = Enum(
        list(MODES),
        "replace",
        help="""What Jupyter AI's agents (its chat personas: Claude Code, Codex, Goose... over ACP) get as MCP servers,
        when Jupyter AI 3 is installed: "replace" gives them this endpoint instead of Jupyter AI's own toolkit
        (jupyter_server_mcp), so every edit they make to a notebook shows in people's presence and can be stopped,
        reviewed and undone here; "add" gives them both (edits through the toolkit bypass all of that); "off"
        changes nothing. They reach the endpoint with a credential the server mints at each start, held only in
        its memory and accepted only from this host; each chat's persona is its own agent, named for the persona
        and the person it answers (docs/jupyter-ai.md). Default: "replace".""",
    ).tag(config=True)

    enable_test_fixtures = Bool(
        False,
        help="""Register the MCP conformance suite's fixture tools (test_reconnection). For testing
        only. Default: False.""",
    ).tag(config=True)

    #: Why a configured ``tool_groups`` was refused (None: it was not). Refusing fails the extension's link,
    #: which Jupyter logs and then loads the extension anyway (``reraise_server_extension_failures`` is off by
    #: default): :meth:`initialize_settings` reads this and refuses to serve a configuration nobody asked for.
    _tool_groups_refused: str | None = None
    #: grants_only was asked without grants (initialize_settings refused to serve, like a refused tool_groups).
    _grants_refused = False
    #: Jupyter AI is there but too old to tell chats apart (3.1): its agents keep its own servers.
    _jupyter_ai_too_old = False

    @validate("tool_groups")
    def _validate_groups(self, proposal: Any) -> list[str]:
        value = list(proposal["value"])
        unknown = [group for group in value if group not in GROUPS]
        if not unknown:
            self._tool_groups_refused = None
            return value
        hint = ""
        if any("," in group or group.strip().startswith("[") for group in unknown):
            hint = (
                ". On the command line a list is given by repeating the option: "
                "--JupyterPairMCP.tool_groups=notebook --JupyterPairMCP.tool_groups=document"
            )
        self._tool_groups_refused = (
            f"JupyterPairMCP.tool_groups = {value!r}: unknown tool groups {unknown!r}; "
            f"known groups: {', '.join(GROUPS)}{hint}"
        )
        raise TraitError(self._tool_groups_refused)

    def initialize_settings(self) -> None:
        assert self.serverapp is not None, "the extension is linked to a server before its settings are built"
        if self._tool_groups_refused:
            # The failed link left the traits as they were before this configuration (all tools, and read_only
            # and the rest unapplied): serving that would expose what the admin meant to hide.
            # (on the server's log, next to Jupyter's own lines about this extension failing to link and load)
            self.serverapp.log.error("MCP endpoint not served: invalid %s", self._tool_groups_refused)
            raise TraitError(f"the MCP endpoint is not served: invalid {self._tool_groups_refused}")
        if self.grants_only and not self.enable_grants:
            # Nothing could get in: say so, rather than serve an endpoint that refuses everyone.
            self._grants_refused = True
            self.serverapp.log.error("MCP endpoint not served: grants_only needs enable_grants")
            raise TraitError("the MCP endpoint is not served: grants_only needs enable_grants")
        self.principal_key: bytes = secrets.token_bytes(32)
        install_exit_guard()
        self.rate_limiter = RateLimiter(self.rate_limit, self.rate_limit_burst) if self.rate_limit > 0 else None
        package_log = logging.getLogger("jupyter_pair_mcp")
        own = [h for h in package_log.handlers if not getattr(h, "collects_session_lines", False)]  # session_log.py
        if not own and not logging.getLogger().handlers:
            # Our modules log under "jupyter_pair_mcp" (rooms kept and closed, scans, history): Jupyter configures
            # only its app loggers, so without this their INFO lines would never reach the server's log.
            for handler in self.serverapp.log.handlers:
                package_log.addHandler(handler)
            package_log.setLevel(self.serverapp.log.getEffectiveLevel())
        if logging.getLogger("mcp").level == logging.NOTSET:
            # The SDK logs session ids at INFO; keep them out of Jupyter's log unless asked for.
            logging.getLogger("mcp").setLevel(logging.WARNING)
        contents = ContentsAdapter(
            self.serverapp.contents_manager,
            allow_symlinks_outside_root=self.allow_symlinks_outside_root,
            max_directories=self.max_listed_directories,
        )
        ystore_path = self.ystore_path or os.path.join(jupyter_data_dir(), "jupyter_pair_mcp", "ystore.db")
        self.rooms = RoomsAdapter(
            self.serverapp,
            idle_timeout=self.room_idle_timeout,
            ystore_path=os.path.abspath(ystore_path),
            max_history_updates=self.max_history_updates,
            explain=contents.load_problem,
            scan_processes=self.scan_processes,
            max_kept_size=self.max_kept_rooms_size,
            save_interval=self.max_save_interval,
            max_history_cache_bytes=self.max_history_cache_bytes,
            max_replica_bytes=self.max_replica_bytes,
        )
        self._linear_ydoc = self.linear_notebook_load and linear_ydoc.install(self.rooms.scanner)
        self.history = HistoryService(self.rooms, fold_interval=self.history_fold_interval)
        self.forks = ForkService(
            self.rooms, max_forks=self.max_forks, max_per_user=self.max_forks_per_user, ttl=self.fork_ttl
        )
        self.kernels = KernelsAdapter(self.serverapp)
        self.actors = Actors(agent_name=self.agent_name)
        self.audit = AuditTrail(self.serverapp.event_logger)
        self.activity = ActivityLog(self.max_activity_entries)
        self.rooms.disk.on_merge = lambda path, merged: self.activity.add(
            disk_merge(path, merged.conflicts, merged.dropped)
        )
        grants_path = self.grants_path or os.path.join(jupyter_data_dir(), self._own_file("pair_mcp_grants.json"))
        self.grants = (
            GrantStore(
                grants_path,
                max_per_person=max(1, self.max_grants_per_person),
                access_ttl=float(max(60, self.grant_access_token_lifetime)),
            )
            if self.enable_grants
            else None
        )
        self._authorization_server: AuthorizationServer | None = None
        stops_path = os.path.join(os.path.dirname(grants_path), self._own_file(STOPS_FILE))
        self.stops = Stops(
            max_total=self.max_stopped_agents,
            log=self.activity,
            identity=contents.file_keys,
            # A grant's agent's stops outlive a restart, as the grant does: kept next to the grants.
            path=stops_path if self.grants is not None else None,
        )
        if self.grants is not None:
            self.grants.on_revoke(lambda grant, _by: self.stops.forget_grant(grant.id))
        self.suggestions = SuggestionService(
            self.rooms,
            self.activity,
            self.history,
            contents,
            review_mode=self.review_mode,
            bounds=SuggestionBounds(
                per_document=self.max_suggestions_per_document,
                share=self.suggestion_share_per_document,
                per_principal=self.max_suggestions_per_principal,
                bytes_per_principal=self.max_suggestion_bytes_per_principal,
                bytes_total=self.max_suggestion_bytes,
            ),
            ttl=self.suggestion_ttl,
        )
        self.suggestions.single_user = type(self.serverapp.identity_provider) in (
            IdentityProvider,
            PasswordIdentityProvider,
        )
        # A stopped agent's undo stacks outlive its session: the person may undo its edits from the panel.
        self.actors.on_end(lambda actor: None if self.stops.holds(actor) else self.history.undo.forget(actor))
        self.presence = PresenceService(
            self.rooms,
            timeout=self.presence_timeout,
            stateless_timeout=self.stateless_presence_timeout,
            log=self.activity,
            typing_window=self.typing_window,
            single_user=type(self.serverapp.identity_provider) in (IdentityProvider, PasswordIdentityProvider),
        )
        self.actors.on_end(self.presence.ended)
        self.show = ShowRequests(self.serverapp.event_logger, self.grants, single_user=self.presence.single_user)
        self.heap_trim = HeapTrim(self.heap_trim_interval)
        self.actors.on_end(self.heap_trim.request)  # settle s later: what the session held is let go
        if getattr(self.rooms, "journal", None) is not None:
            self.rooms.journal.on_edit(self.presence.edited)
        self.contents = contents
        self.execution = ExecutionService(
            self.rooms,
            self.kernels,
            max_output_length=self.max_output_length,
            include_images=self.include_images,
            max_per_principal=self.max_executions_per_principal,
        )
        self.steering = Steering(
            contents=contents,
            rooms=self.rooms,
            history=self.history,
            presence=self.presence,
            execution=self.execution,
            actors=self.actors,
            stops=self.stops,
            log=self.activity,
            sessions=lambda: self._endpoint.runner.manager if self._endpoint is not None else None,
            stop_users=self.stop_agents_users,
            end_streams=lambda principal, where: self.subscriptions.end_streams(principal, where),
            stopped=self._end_chat_turn,
        )
        self.subscriptions = SubscriptionManager(
            self.rooms,
            contents,
            interval=self.notification_interval,
            per_session=self.max_subscriptions_per_session,
            streams_per_principal=self.max_listen_streams_per_principal,
        )
        if self.serverapp.event_logger is not None:
            self.serverapp.event_logger.add_listener(
                schema_id="https://events.jupyter.org/jupyter_server/contents_service/v1",
                listener=self.subscriptions.on_contents_event,
            )
        self._endpoint: Endpoint | None = None
        if self.grants is not None:
            self.grants.on_revoke(
                GrantEnder(
                    principal_key=self.principal_key,
                    execution=self.execution,
                    subscriptions=self.subscriptions,
                    endpoint=lambda: self._endpoint,
                    presence=self.presence,
                ).revoked
            )
        self.jupyter_ai_access: JupyterAIAccess | None = None
        jupyter_ai = JupyterAI(self.serverapp)
        self._jupyter_ai_too_old = jupyter_ai.present and not jupyter_ai.identifies_chats
        if self.jupyter_ai != "off" and jupyter_ai.present and not self._jupyter_ai_too_old and not self.serverapp.sock:
            self.jupyter_ai_access = JupyterAIAccess(jupyter_ai)
            self.jupyter_ai_access.cancelled = self._chat_turn_cancelled
        self._building: asyncio.Future[None] | None = None
        self._stopping: asyncio.Future[None] | None = None
        with contextlib.suppress(RuntimeError):
            # Under a running loop (embedded servers, tests) the start hook may never run: configure the
            # YStore as soon as every extension has loaded, before any room can open.
            asyncio.get_running_loop().call_soon(self.rooms.configure_ystore)

    def initialize_handlers(self) -> None:
        self.handlers.append((r"/mcp/?", MCPHandler, {"extension": self}))
        self.handlers.extend(health_handlers(self.health_details))
        if getattr(self, "steering", None) is not None:  # not when the settings were refused
            self.handlers.extend(rest_handlers(self.steering))
            self.handlers.extend(review_handlers(self.suggestions))
            self.handlers.extend(show_handlers(self.show))
        grants = getattr(self, "grants", None)
        if grants is not None:
            assert self.serverapp is not None
            inside, root = oauth_handlers(self, self.serverapp.base_url)
            self.handlers.extend(inside)
            self.handlers.extend(grant_handlers(grants, self.suggestions.single_user))
            if root:  # a non-root base_url: the well-known paths belong at the host's root (RFC 8414, RFC 9728)
                self.serverapp.web_app.add_handlers(".*$", root)  # type: ignore[no-untyped-call]

    @staticmethod
    def _own_file(name: str) -> str:
        """A file of this server's in Jupyter's data directory (grants, stops): one per server of a hub's user,
        whose servers share that directory."""
        hub = hub_server()
        return hub.own_file(name) if hub is not None else name

    def grant_of(self, token: str) -> Any:
        """The live grant a grant access token belongs to, or None (the /mcp handler's question)."""
        access = getattr(self, "jupyter_ai_access", None)
        minted = access.grant_of(token) if access is not None else None
        if minted is not None:
            return minted
        return self.grants.by_access(token) if self.grants is not None else None

    def chat_grant(self, remote_ip: str | None, headers: Any) -> Any:
        """The grant of the Jupyter AI chat persona a request names (None: refused; docs/jupyter-ai.md)."""
        access = self.jupyter_ai_access
        return access.chat_grant(remote_ip, headers) if access is not None else None

    def _chat_turn_cancelled(self, grant_id: str) -> None:
        """The chat's stop ended a Jupyter AI agent's turn: its runs in the rooms end too."""
        self.execution.interrupt(lambda actor: getattr(actor, "grant", "") == grant_id, None, CHAT_STOPPED)

    async def _end_chat_turn(self, actor: Any, path: str, person: Any) -> bool:
        """A stopped agent that is a Jupyter AI chat's persona: its turn in the chat ends too."""
        access = self.jupyter_ai_access
        return await access.end_turn(actor, path, person) if access is not None else False

    def _register_jupyter_ai(self) -> None:
        """Give Jupyter AI's chats this endpoint (JupyterPairMCP.jupyter_ai), or say once why their toolkit
        cannot load (it fails to import next to this package's mcp version)."""
        problem = toolkit_problem()
        access = self.jupyter_ai_access
        if self._jupyter_ai_too_old and self.jupyter_ai != "off":
            self.log.info(
                "Jupyter AI: this version does not tell which chat an agent's call comes from, so its agents keep "
                "its own MCP servers; jupyter-ai 3.2 or later gets them this endpoint (JupyterPairMCP.jupyter_ai)"
            )
        if access is not None:
            assert self.serverapp is not None
            url, own = local_url(
                self.serverapp.ip, self.serverapp.port, self.serverapp.base_url, https=bool(self.serverapp.certfile)
            )
            access.own_addresses = own
            access.jupyter_ai.register(access.entry(url), self.jupyter_ai, toolkit_loads=problem is None)
            self.log.info(
                "Jupyter AI: its chats' agents get this MCP endpoint (JupyterPairMCP.jupyter_ai=%r)", self.jupyter_ai
            )
        if problem is None:
            return
        if access is not None:
            self.log.warning(
                "%s; Jupyter AI's agents get this endpoint instead (JupyterPairMCP.jupyter_ai=%r)",
                problem,
                self.jupyter_ai,
            )
        else:
            self.log.warning(
                "%s; Jupyter AI's agents get no MCP server: set JupyterPairMCP.jupyter_ai to 'replace' to give them "
                "this endpoint",
                problem,
            )

    async def authorization_server(self) -> AuthorizationServer:
        """The OAuth routes (the MCP SDK's), built on first use like the endpoint, whose import they share."""
        if self._authorization_server is None:
            await self.endpoint()  # the SDK is imported (off the loop) by the endpoint's build
            from jupyter_pair_mcp.protocol.oauth import AuthorizationServer

            assert self.serverapp is not None and self.grants is not None
            self._authorization_server = AuthorizationServer(self.grants, self.serverapp.base_url)
        return self._authorization_server

    def health_details(self) -> dict[str, Any]:
        """What ``mcp/health`` tells a person (never an anonymous caller): version, sessions, rooms open."""
        manager = self._endpoint.runner.manager if self._endpoint is not None else None
        points = self.serverapp.extension_manager.extension_points if self.serverapp is not None else {}
        ydoc = getattr(points.get("jupyter_server_ydoc"), "app", None)
        rooms = getattr(getattr(ydoc, "ywebsocket_server", None), "rooms", {})
        return {"version": __version__, "sessions": manager.session_count if manager else 0, "rooms": len(rooms)}

    @property
    def mcp_url(self) -> str:
        assert self.serverapp is not None
        return str(url_path_join(self.serverapp.connection_url, "mcp"))

    async def endpoint(self) -> ManagerRunner:
        """The running MCP session manager, built on first use (see :mod:`jupyter_pair_mcp.protocol.endpoint`)."""
        if self._endpoint is None:
            if self._building is None or (self._building.done() and self._building.exception() is not None):
                self._building = asyncio.ensure_future(self._build())
            await asyncio.shield(self._building)
        assert self._endpoint is not None
        await self._endpoint.runner.ensure_started()
        return self._endpoint.runner

    async def _build(self) -> None:
        # Importing the SDK and building the server (pydantic models of every tool: ~0.2 s of CPU) touch no
        # loop state: both run off the loop, which every notebook and kernel of the user shares.
        await asyncio.to_thread(importlib.import_module, "jupyter_pair_mcp.protocol.endpoint")
        from jupyter_pair_mcp.protocol.endpoint import build_endpoint

        self._endpoint = await asyncio.to_thread(build_endpoint, self)

    def _built(self) -> Endpoint:
        if self._endpoint is None:
            raise RuntimeError("the MCP endpoint is built on its first request or when the server has started")
        return self._endpoint

    @property
    def runner(self) -> ManagerRunner:
        return self._built().runner

    @property
    def event_store(self) -> MemoryEventStore:
        return self._built().event_store

    @property
    def tool_names(self) -> list[str]:
        return self._built().tool_names

    @property
    def mcp_server(self) -> Any:
        return self._built().mcp_server

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        if self._tool_groups_refused or self._grants_refused:
            return  # not loaded (initialize_settings said why): nothing to start
        self.rooms.configure_ystore()  # every extension is loaded now; no room is open yet
        self._register_jupyter_ai()  # before the first await: no chat may open without it
        await self.endpoint()
        if self.freeze_startup_heap:  # last: the endpoint's objects are built now, and live as long
            freeze_startup_heap(self.log)
        hub = hub_server()
        if hub is not None:  # the internal address and the server's own token are no use to a hub's user
            self.log.info("%s", hub.startup_line(len(self.tool_names), grants=self.grants is not None))
        else:
            self.log.info(
                "MCP endpoint: %s (%d tools) - %s", self.mcp_url, len(self.tool_names), self._how_to_connect()
            )
        if not labextension_found(Path(__file__).parent, jupyter_path("labextensions")):
            self.log.info(
                "JupyterLab UI of jupyter-pair-mcp is not built: the MCP endpoint works, but JupyterLab shows "
                "no agent indicator or activity panel (Node.js 20+ is needed to build it from a clone: "
                "install Node, then 'pip install -e .' again)"
            )

    def _how_to_connect(self) -> str:
        """The start line's advice: the no-token flow first, where grants are on; the token only where it works."""
        header = "the header 'Authorization: Bearer <your Jupyter token>' ('jupyter server list' shows the token)"
        if self.grants is None:
            return f"connect an MCP client with {header}"
        no_token = (
            "connect an MCP client with just this URL: it opens a browser on Jupyter, where you approve it "
            "(docs/authorization.md)"
        )
        if self.grants_only:
            return f"{no_token}; only grants are accepted here (grants_only), the server's token is not"
        return f"{no_token}; a client without MCP authorization: {header}"

    async def stop_extension(self) -> None:
        """Stop once, however often the server is told to stop (a second Ctrl+C or signal runs the server's
        cleanup again, concurrently): every call waits for the first stop to end, never starts another."""
        if getattr(self, "_stopping", None) is None:
            self._stopping = asyncio.ensure_future(self._stop())
        assert self._stopping is not None
        await asyncio.shield(self._stopping)

    async def _stop(self) -> None:
        """Stop serving, then write every open document with changes not on disk yet, then close; all of it
        within ``shutdown_timeout`` seconds.

        The server stops the extensions concurrently and then ends its loop; a room's autosave still
        waiting out its ``document_save_delay`` would never run, losing edits the tools reported as
        applied. So the rooms are noted here before our first ``await`` (jupyter_server_ydoc's own stop
        runs alongside), the endpoint stops (every session, stream and call in flight ends: its edits
        are in the rooms already), and the rooms that had a save pending, or changed meanwhile, are
        written. Ending the sessions gets at most half the budget, so the writes always get the other.
        """
        if self._tool_groups_refused or self._grants_refused:
            return  # not loaded (initialize_settings said why): nothing to stop
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.shutdown_timeout
        unsaved = self.rooms.unsaved()
        saved: list[str] = []
        try:
            ending = started + self.shutdown_timeout / 2
            if self._building is not None and not self._building.done():
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(self._building), max(0.0, ending - loop.time()))
            if self._endpoint is not None:
                await self._endpoint.runner.stop(max(0.0, ending - loop.time()))
                await self._endpoint.tasks.close(max(0.0, ending - loop.time()))  # runs as tasks end too
            self.log.debug("MCP sessions ended in %.2f s", loop.time() - started)
        finally:  # whatever went wrong stopping the endpoint, the documents are written
            saved = await self.rooms.save_unsaved(unsaved, timeout=max(0.0, deadline - loop.time()))
        self.log.debug("Open documents written after %.2f s", loop.time() - started)
        await self.subscriptions.close()
        await self.kernels.close()
        await self.suggestions.close()
        await self.forks.close()
        await self.presence.close()
        await self.rooms.close()
        await self.heap_trim.close()
        if self._linear_ydoc:
            linear_ydoc.uninstall()
        self.log.info(
            "MCP endpoint stopped in %.1f s; %d open document(s) with unsaved changes written",
            loop.time() - started,
            len(saved),
        )
