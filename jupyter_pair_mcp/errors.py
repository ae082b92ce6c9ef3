"""The errors our adapters raise, and the one place they become MCP tool errors.

Adapters raise these instead of HTTP or backend exceptions so that every tool reports a problem the
same way: a message that names what is wrong and what the agent can do about it. The tool boundary
(:func:`jupyter_pair_mcp.tools.registry`) turns them into ``isError: true`` results; anything
else that escapes a tool is logged with its traceback on the server and reported to the client as
an internal error without any detail. What counts as such a failure is :func:`is_fault`.

Hierarchy::

    PairMCPError            base: the message is safe to show to the agent
    ├── InvalidArgument         a parameter is malformed or out of range
    │   └── InvalidPath         a path that can never be valid (absolute, '..', hidden, outside root)
    ├── NotFound                the file, directory or cell does not exist
    ├── PermissionDenied        the Jupyter authorizer refused the action
    │   ├── AgentStopped        a person stopped this agent in the document (until they allow it again)
    │   └── Locked              a person locked the cell (or the whole notebook) against agents
    ├── Conflict                the document changed since the agent read it
    └── Unavailable             a backend the tool needs is not running (collaboration, kernels)
        └── KernelGatewayError      the kernel gateway the server uses (--gateway-url) failed or is down
"""

from __future__ import annotations

import asyncio


class PairMCPError(Exception):
    """Base class: ``str(error)`` is an actionable message shown to the agent verbatim."""

    kind = "error"


class InvalidArgument(PairMCPError):
    """A parameter is malformed or out of range; retrying with a corrected value can succeed."""

    kind = "invalid_argument"


class InvalidPath(InvalidArgument):
    """A path that our path policy refuses whatever the file system holds."""

    kind = "invalid_path"


class NotFound(PairMCPError):
    """The named file, directory or cell does not exist (now)."""

    kind = "not_found"


class PermissionDenied(PairMCPError):
    """Jupyter's authorizer refused the caller the action this tool needs."""

    kind = "permission_denied"


class AgentStopped(PermissionDenied):
    """A person stopped this agent in a document; its calls there are refused until they allow it again."""

    kind = "agent_stopped"
    note = ""  # a stopped run's: what its cell says of the stop, for people (services/execution.py)


class Locked(PermissionDenied):
    """A person marked the cell (or the whole notebook) off-limits to agents in JupyterLab; the message names the
    cell and the person, who alone can lift the lock."""

    kind = "locked"


class Conflict(PairMCPError):
    """The document changed since the agent read it; re-read and retry."""

    kind = "conflict"


class Unavailable(PairMCPError):
    """A server component the tool depends on is not enabled or not running."""

    kind = "unavailable"


class KernelGatewayError(Unavailable):
    """The kernel gateway the server hands kernels to (``--gateway-url``) is down, unreachable or refused: the
    message names it (host and port only) and what to check."""

    kind = "kernel_gateway"


#: BaseExceptions that are not failures of the work: cancellation and the process ending. They pass every boundary.
_NOT_FAULTS = (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit)


def is_fault(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure of the work under way, to be contained where it happened.

    Every ``Exception`` is, and so is any other ``BaseException`` but cancellation and the process ending: a
    Rust panic in pycrdt reaches Python as pyo3's ``PanicException``, which derives from ``BaseException`` so
    that ``except Exception`` does not swallow it. Left to propagate, it crosses the SDK's task groups (which
    contain only ``Exception``) and ends the session manager and every session with it. A group is a fault when
    all it holds are.
    """
    if isinstance(exc, BaseExceptionGroup):
        return all(is_fault(inner) for inner in exc.exceptions)
    return isinstance(exc, Exception) or not isinstance(exc, _NOT_FAULTS)
