"""What the contents manager's failures mean to an agent: errors without server paths, and why a file cannot load.

Jupyter's contents manager raises ``HTTPError`` and ``OSError`` whose messages can carry absolute server paths;
these helpers turn them into our typed errors with the root scrubbed, and explain unloadable notebooks and
text files in one line.
"""

from __future__ import annotations

import errno
import json
import os

import nbformat
from tornado.web import HTTPError

from jupyter_pair_mcp.errors import InvalidArgument, NotFound, PermissionDenied

#: Actions that write ``path`` (a new file, or a copy's destination): a refusal is about writing there.
WRITES = frozenset({"create", "copy to"})


def translate(exc: HTTPError, path: str, *, action: str = "read", root: str | None = None) -> Exception:
    """The agent's error for the contents manager's ``exc`` on ``path`` (for a copy: its destination)."""
    if exc.status_code == 404:
        if action == "read":  # reads that reach the manager are directory listings and models
            return NotFound(f"no such directory {path!r}: list the parent directory to see what exists")
        return NotFound(f"cannot {action} {path!r}: it (or the directory it goes to) no longer exists")
    if exc.status_code == 403:
        if action in WRITES:
            return PermissionDenied(
                f"cannot {action} {path!r}: the server may not write there (permission denied); "
                "pick a folder it can write to"
            )
        return PermissionDenied(f"the server refuses access to {path!r}")
    return InvalidArgument(f"cannot {action} {path!r}: {reason(exc, root)}")


def reason(exc: HTTPError, root: str | None) -> str:
    """The contents manager's reason, without the server's absolute paths it likes to include."""
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, OSError):
        return os_reason(cause, root)
    text = str(exc.log_message or exc.reason or exc.status_code)
    if "Unreadable Notebook" in text:
        return "it is not a valid notebook: read it with get_notebook to see why"
    if "File name too long" in text:
        return "the file name is too long"
    return scrub(text, root)


def os_reason(exc: OSError, root: str | None = None) -> str:
    """An OSError in words, without the file name (it is a server path)."""
    if exc.errno == errno.ENAMETOOLONG:
        return "the file name is too long"
    if exc.strerror:
        return exc.strerror
    # No errno text (shutil.Error, for one, is an OSError carrying only a message full of server paths).
    return scrub(str(exc), root) or type(exc).__name__


def scrub(text: str, root: str | None) -> str:
    """The first line of ``text`` (at most 300 characters) with the server's root directory taken out."""
    for prefix in sorted({root, os.path.realpath(root)} if root else set(), key=len, reverse=True):
        text = text.replace(prefix.rstrip("/") + "/", "").replace(prefix, "")
    return text.split("\n", 1)[0][:300]


def problem(raw: bytes, kind: str) -> str | None:
    """What makes ``raw`` unloadable as a notebook or a text file, or None when it loads."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"binary content, not UTF-8 text: byte {exc.start} is 0x{raw[exc.start]:02x}"
    if kind != "notebook":
        return None
    try:
        json.loads(text)
    except ValueError as exc:
        return f"not JSON: {exc}"
    try:
        nbformat.reads(text, as_version=4, capture_validation_error={})  # type: ignore[no-untyped-call]
    except Exception as exc:
        message = str(getattr(exc, "message", None) or exc).splitlines()[0][:200]
        return f"not nbformat: {message}"
    return None
