"""Listing documents: entries as the contents manager describes them, path filters, and a resumable walk.

The policy of which paths may be touched is ``adapter.py``'s; this module is what the listing tools and the
resources list build on top of it: an :class:`Entry` per file or directory, a user's filter split into the
directory to walk and a predicate (:func:`matcher`), and a depth-first walk that resumes from a path alone
(:func:`walk_after`), so a page of a paged listing costs what it walks. It asks a :class:`Lister` (the
contents adapter) for each directory's children, never the contents manager itself.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from jupyter_pair_mcp.errors import NotFound

_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Entry:
    """One file or directory as the contents manager describes it (no content)."""

    path: str
    name: str
    type: str  # "notebook", "file" or "directory"
    size: int | None
    last_modified: str | None
    writable: bool


class Lister(Protocol):
    """What a walk needs of the contents adapter: a directory's children, and whether a path leaves the root."""

    async def _children(self, directory: str) -> list[Entry]: ...

    def _is_link_outside(self, path: str) -> bool: ...


def entry_of(model: dict[str, Any]) -> Entry:
    """The :class:`Entry` of a contents model (its timestamp as ISO 8601)."""
    last_modified: Any = model.get("last_modified")
    if hasattr(last_modified, "isoformat"):
        last_modified = last_modified.isoformat()
    return Entry(
        path=model["path"],
        name=model["name"],
        type=model["type"],
        size=model.get("size"),
        last_modified=last_modified,
        writable=bool(model.get("writable", False)),
    )


def matcher(path_filter: str) -> tuple[str, Any]:
    """Split a user filter into the directory to walk and a predicate on entry paths.

    A filter with glob characters (``*?[``) matches whole paths (``**/*.md`` style, via fnmatch);
    otherwise it is a path prefix (``work/`` lists that directory, ``work/da`` what starts so).
    """
    cleaned = path_filter.strip()
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    if any(c in _GLOB_CHARS for c in cleaned):
        static = cleaned.split("/")
        base_parts: list[str] = []
        for part in static[:-1]:
            if any(c in _GLOB_CHARS for c in part):
                break
            base_parts.append(part)
        return "/".join(base_parts), lambda p: fnmatch.fnmatchcase(p, cleaned)
    base = cleaned.rstrip("/") if cleaned.endswith("/") else posixpath.dirname(cleaned)
    return base, lambda p: p.startswith(cleaned)


async def walk_after(
    contents: Lister,
    after: str,
    *,
    accept: Any,
    limit: int,
    max_directories: int,
    enters: Callable[[str], bool] | None = None,
) -> tuple[list[Entry], int, bool]:
    """The first ``limit`` entries ``accept`` keeps after the path ``after`` ("" = from the root), depth
    first in listing order (a directory's files by name, then its directories): resumable from a path alone.

    The walk to continue is rebuilt from the ancestors of ``after`` — one listing each — so a page of a
    paged listing costs what it walks, never the entries before it; and the order is fixed by the names,
    so the same files give the same pages. A directory that vanished meanwhile is skipped. Returns the
    entries, the directories listed (at most ``max_directories``) and whether the walk reached the end.
    ``enters(path)`` False: the walk does not go into that directory (a grant's folders are elsewhere).
    """
    listed = 0

    def order(entry: Entry) -> tuple[bool, str]:
        return entry.type == "directory", entry.name

    async def children(directory: str) -> list[Entry]:
        nonlocal listed
        listed += 1
        try:
            return await contents._children(directory)
        except NotFound:
            return []

    stack: list[tuple[list[Entry], int]] = []  # (a directory's children, the next one to visit)
    parts = after.split("/") if after else []
    directory = ""
    for depth, name in enumerate(parts):
        if listed >= max_directories:
            return [], listed, False
        found = await children(directory)
        mark = (depth < len(parts) - 1, name)  # its ancestors are directories, ``after`` itself is not
        stack.append((found, next((i for i, e in enumerate(found) if order(e) > mark), len(found))))
        directory = posixpath.join(directory, name)
    if not parts:
        stack.append((await children(""), 0))
    kept: list[Entry] = []
    while stack and len(kept) < limit:
        found, position = stack[-1]
        if position >= len(found):
            stack.pop()
            continue
        stack[-1] = (found, position + 1)
        entry = found[position]
        if accept(entry):
            kept.append(entry)
        if (
            entry.type == "directory"
            and (enters is None or enters(entry.path))
            and not contents._is_link_outside(entry.path)
        ):
            if listed >= max_directories:
                return kept, listed, False
            stack.append((await children(entry.path), 0))
    return kept, listed, not stack
