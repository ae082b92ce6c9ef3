"""``tools/list`` answered from the wire form built the first time: the list is fixed once the server is built.

The MCP SDK shapes every result into its wire form inside the middleware chain: it dumps the handler's models,
then validates and dumps the whole result again against the protocol version's surface. For a 51-tool list that
is a third of the server's time on the request, each time, for the same ~30 KB. This middleware keeps the
dict the chain produced for a protocol version (and cursor) and answers later requests with it, which the
SDK allows: a middleware that answers without ``call_next`` owns its result, envelope included.

Only for connections past the handshake: a request before ``initialize`` goes down the chain, which answers
it with the SDK's own error, as without the cache.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

METHOD = "tools/list"
MAX_ENTRIES = 16  # protocol versions x cursors; past it the cache starts over


class CachedToolList:
    """Server middleware answering ``tools/list`` from the result built for the same version and params."""

    def __init__(self) -> None:
        self._results: dict[tuple[str, str], dict[str, Any]] = {}

    def clear(self) -> None:
        """Forget every built list (call when the tools change)."""
        self._results.clear()

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method != METHOD or not _past_handshake(ctx):
            return await call_next(ctx)
        key = (str(ctx.protocol_version), _params_key(ctx.params))
        cached = self._results.get(key)
        if cached is not None:
            return dict(cached)  # a fresh top level: nothing downstream writes into ours
        result = await call_next(ctx)
        if isinstance(result, dict):
            if len(self._results) >= MAX_ENTRIES:
                self._results.clear()
            self._results[key] = dict(result)
        return result


def _params_key(params: Mapping[str, Any] | None) -> str:
    """The request's params without ``_meta`` (a progress token or trace id does not change the list)."""
    if not params:
        return ""
    return json.dumps({k: v for k, v in params.items() if k != "_meta"}, sort_keys=True, default=str)


def _past_handshake(ctx: Any) -> bool:
    """Whether this connection may be answered (initialized, or the stateless 2026-07-28 era): the SDK's gate."""
    connection = getattr(ctx.session, "_connection", None)  # ServerSession keeps its connection there
    return bool(getattr(connection, "initialize_accepted", False))
