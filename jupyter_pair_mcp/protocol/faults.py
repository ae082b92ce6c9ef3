"""A failure in one request ends that request: the last net under every handler, in both protocol eras.

Tools, resource reads and the task methods each have their own boundary (tools/registry.py, resources.py,
services/tasks.py); this middleware is the one under everything else a client can send (prompts, listings,
subscriptions, notifications, and what the SDK itself runs inside the chain). The SDK's own boundaries catch
``Exception`` only: a pycrdt Rust panic arrives as pyo3's ``PanicException``, a ``BaseException``, which
crossed them, ended the session's server task and with it the session manager's task group — every later
request then answered 500 until Jupyter restarted. And a plain ``Exception`` reached a handshake-era client as
its ``str()``, which can name server paths.

So any :func:`~jupyter_pair_mcp.errors.is_fault` that is not already an answer (``MCPError``) or the SDK's
parameter validation (``ValidationError``, its INVALID_PARAMS) is logged here with its traceback under a short
reference and answered as JSON-RPC INTERNAL_ERROR naming only that reference. Cancellation and the process
ending pass through.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR
from pydantic import ValidationError

from jupyter_pair_mcp.errors import is_fault

log = logging.getLogger(__name__)


def internal_error(what: str, exc: BaseException) -> MCPError:
    """Log ``exc`` with its traceback under a new reference; the JSON-RPC error for the client names only it."""
    ref = secrets.token_hex(4)
    log.error("%s failed (ref %s)", what, ref, exc_info=exc)
    return MCPError(INTERNAL_ERROR, f"internal error (ref {ref}); the Jupyter server log has the details")


class ContainFaults:
    """Server middleware, the outermost of ours: a request's failure becomes its INTERNAL_ERROR answer."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        try:
            return await call_next(ctx)
        except (MCPError, ValidationError):
            raise  # already an answer, or the SDK's own INVALID_PARAMS
        except BaseException as exc:
            if not is_fault(exc):
                raise
            error = internal_error(f"MCP {getattr(ctx, 'method', '?')}", exc)
            if getattr(ctx, "request_id", None) is None:
                return None  # a notification: nobody to answer, and logged once
            raise error from None
