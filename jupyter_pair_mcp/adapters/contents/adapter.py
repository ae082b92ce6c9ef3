"""Contents-manager access and our path policy: the only module that talks to the ContentsManager.

Every tool path is an API path relative to the Jupyter root, ``/``-separated. The policy, checked
before the contents manager is asked anything, is stricter than the manager's own: no ``..``, no
absolute or drive paths, no backslashes or control characters, no hidden components while the
server hides them (``ContentsManager.allow_hidden``), and — unless an admin allows it — no path
that resolves through a symlink to somewhere outside the root (the file contents manager follows
such links). A refused path is an :class:`InvalidPath` naming the rule and the way out. Entries, filters and
the resumable walk the listings page through are ``listing.py``'s.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import os
import posixpath
from collections import deque
from typing import Any

import nbformat
from jupyter_core.utils import ensure_async
from tornado.web import HTTPError

from jupyter_pair_mcp.adapters.contents.errors import os_reason, problem, translate
from jupyter_pair_mcp.adapters.contents.listing import Entry, entry_of
from jupyter_pair_mcp.errors import InvalidArgument, InvalidPath, NotFound

log = logging.getLogger(__name__)


class ContentsAdapter:
    """Path policy and listing over a Jupyter ContentsManager (sync or async)."""

    def __init__(self, manager: Any, *, allow_symlinks_outside_root: bool = False, max_directories: int = 2000):
        self.manager = manager
        self.allow_symlinks_outside_root = allow_symlinks_outside_root
        self.max_directories = max_directories
        self._real_root: tuple[str, str] | None = None

    # -- policy ---------------------------------------------------------------------------------
    def normalize(self, path: str, *, allow_root: bool = False) -> str:
        """Return the canonical API path for ``path`` or raise :class:`InvalidPath`."""
        if not isinstance(path, str):
            raise InvalidArgument("path must be a string")
        if "\\" in path:
            raise InvalidPath(f"path {path!r} contains a backslash: use '/' separators")
        if any(ord(c) < 32 or ord(c) == 127 for c in path):
            raise InvalidPath(f"path {path!r} contains a control character (such as a NUL byte or newline): remove it")
        if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
            raise InvalidPath(
                f"path {path!r} is absolute: give a path relative to the Jupyter root, like 'work/analysis.ipynb'"
            )
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise InvalidPath(f"path {path!r} leaves the Jupyter root ('..' is not allowed)")
        if not getattr(self.manager, "allow_hidden", False) and any(p.startswith(".") for p in parts):
            raise InvalidPath(
                f"path {path!r} is hidden (a component starts with '.'); the server does not expose hidden files"
            )
        normalized = "/".join(parts)
        if not normalized and not allow_root:
            raise InvalidArgument("path is empty: name a file relative to the Jupyter root")
        self._check_symlinks(normalized, path)
        return normalized

    def _check_symlinks(self, normalized: str, original: str) -> None:
        root = getattr(self.manager, "root_dir", None)
        if self.allow_symlinks_outside_root or not isinstance(root, str):
            return
        if self._real_root is None or self._real_root[0] != root:
            self._real_root = (root, os.path.realpath(root))
        real_root = self._real_root[1]
        real = os.path.realpath(os.path.join(root, *normalized.split("/")))
        if os.path.commonpath([real_root, real]) != real_root:
            raise InvalidPath(f"path {original!r} resolves outside the Jupyter root (through a symbolic link)")

    def file_keys(self, normalized: str) -> tuple[str, ...]:
        """Every name of the file behind a path: its real path (symbolic links resolved) and its inode (a hard
        link's only common name), so a person's stop through one path holds through all. Managers without a
        local root have only the path."""
        root = self._root()
        if root is None:
            return (normalized,)
        real = os.path.realpath(os.path.join(root, *normalized.split("/")))
        try:
            st = os.stat(real)
        except OSError:
            return (f"real:{real}",)
        return (f"real:{real}", f"inode:{st.st_dev}:{st.st_ino}")

    # -- queries --------------------------------------------------------------------------------
    async def kind(self, path: str, *, normalized: bool = False) -> str | None:
        """``"notebook"``, ``"file"`` or ``"directory"`` for an existing path, else None."""
        if not normalized:
            path = self.normalize(path, allow_root=True)
        return await self._kind(path)

    async def _kind(self, normalized: str) -> str | None:
        if await ensure_async(self.manager.dir_exists(normalized)):
            return "directory"
        if normalized and await ensure_async(self.manager.file_exists(normalized)):
            return "notebook" if normalized.endswith(".ipynb") else "file"
        return None

    async def require(self, path: str, kind: str) -> str:
        """The normalized path of an existing ``kind`` ("notebook" or "file"), else an actionable error.

        Checked before any room is opened: asking collaboration for a missing file leaves a ghost
        room behind that serves an empty document from then on, even after the file is created.
        """
        normalized = self.normalize(path)
        found = await self.kind(normalized, normalized=True)
        if found == kind:
            return normalized
        if found is None:
            noun = "notebook" if kind == "notebook" else "file"
            raise NotFound(f"no {noun} at {normalized!r}: use list_notebooks or list_documents to find it")
        if kind == "notebook":
            raise InvalidArgument(f"{normalized!r} is a {found}, not a notebook (.ipynb): use the document tools")
        raise InvalidArgument(f"{normalized!r} is a {found}, not a text file: use the notebook tools for notebooks")

    async def require_document(self, path: str) -> tuple[str, str]:
        """The normalized path and kind ("notebook" or "file") of an existing notebook or text file."""
        normalized = self.normalize(path)
        kind = await self.kind(normalized, normalized=True)
        if kind not in ("notebook", "file"):
            found = f"a {kind}" if kind else "no notebook or text file"
            raise NotFound(f"{found} at {normalized!r}: give a notebook or text file (list_documents finds them)")
        return normalized, kind

    async def model(self, path: str) -> Entry:
        try:
            return entry_of(await ensure_async(self.manager.get(path, content=False)))
        except HTTPError as exc:
            raise translate(exc, path, root=self._root()) from None

    async def create(self, path: str, kind: str, content: str, *, metadata: dict[str, Any] | None = None) -> str:
        """Create a new file, notebook or directory at ``path`` (never over an existing one).

        ``metadata``: a notebook's metadata (its kernelspec): without one, the room that opens it later
        fills in an empty kernelspec, which JupyterLab asks about and runs with the default kernel.
        """
        path = self.normalize(path)
        if await self.kind(path, normalized=True) is not None:
            raise InvalidArgument(f"{path!r} already exists: pick another path, or edit it instead")
        await self._require_parent(path)
        if kind == "directory":
            model: dict[str, Any] = {"type": "directory"}
        elif kind == "notebook":
            if not path.endswith(".ipynb"):
                raise InvalidArgument(f"a notebook's name must end in .ipynb, not {path!r}")
            nb = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]
            nb.cells = [nbformat.v4.new_markdown_cell(content)] if content else []  # type: ignore[no-untyped-call]
            nb.metadata.update(metadata or {})
            model = {"type": "notebook", "format": "json", "content": nb}
        else:
            model = {"type": "file", "format": "text", "content": content}
        await self._call(self.manager.save(model, path), path, action="create")
        return path

    async def rename(self, path: str, new_path: str) -> tuple[str, str]:
        path, new_path = self.normalize(path), self.normalize(new_path)
        if await self.kind(path, normalized=True) is None:
            raise NotFound(f"nothing at {path!r} to rename")
        if await self.kind(new_path, normalized=True) is not None:
            raise InvalidArgument(f"{new_path!r} already exists: rename to a free path")
        if new_path.startswith(path + "/"):
            raise InvalidArgument(f"cannot move {path!r} into itself ({new_path!r}): pick a path outside it")
        await self._require_parent(new_path)
        await self._call(self.manager.rename(path, new_path), path)
        return path, new_path

    async def copy(self, path: str, copy_path: str) -> tuple[str, str]:
        """Copy a file or notebook to exactly ``copy_path``, all or nothing.

        The contents manager is given the full target path: given a directory it invents
        ``name-Copy1.ext`` there (which we would have to rename, leaving it behind when the rename
        fails), and given a path under a missing directory it writes a *file* named like that directory.
        So the target's directory must exist first, and whatever a failed copy left at ``copy_path``
        (which was free before) is removed.
        """
        path, copy_path = self.normalize(path), self.normalize(copy_path)
        kind = await self.kind(path, normalized=True)
        if kind is None or kind == "directory":
            raise InvalidArgument(f"{path!r} is not a file or notebook to copy")
        if await self.kind(copy_path, normalized=True) is not None:
            raise InvalidArgument(f"{copy_path!r} already exists: copy to a free path")
        await self._require_parent(copy_path)
        try:
            await ensure_async(self.manager.copy(path, copy_path))
        except BaseException as exc:
            await self._remove_leftover(copy_path)
            # The source was found above: what fails is reading it (not a notebook), or writing the copy.
            if isinstance(exc, HTTPError) and "Unreadable Notebook" in str(exc.log_message or exc.reason or ""):
                raise translate(exc, path, action="copy", root=self._root()) from None
            if isinstance(exc, HTTPError):
                raise translate(exc, copy_path, action="copy to", root=self._root()) from None
            if isinstance(exc, OSError):
                raise InvalidArgument(f"cannot copy to {copy_path!r}: {os_reason(exc, self._root())}") from None
            raise
        return path, copy_path

    async def _require_parent(self, path: str) -> None:
        parent = posixpath.dirname(path)
        if not parent:
            return
        found = await self.kind(parent, normalized=True)
        if found is None:
            raise NotFound(f"directory {parent!r} does not exist: create it first (create_document type 'directory')")
        if found != "directory":
            raise InvalidArgument(f"{parent!r} is a {found}, not a directory: give a path inside a directory")

    async def _remove_leftover(self, path: str) -> None:
        try:
            if await self.kind(path, normalized=True) is not None:
                await ensure_async(self.manager.delete(path))
        except Exception:  # best effort: the copy's own error is what the agent needs
            log.warning("Could not remove what a failed copy left at %s", path, exc_info=True)

    async def load_problem(self, path: str, kind: str) -> str | None:
        """Why collaboration cannot load ``path`` as a ``kind`` ("notebook" or "file"), in words for the agent.

        Called only after a load failed (it reads the whole file): the collaboration loader's own
        message names the server's absolute path, and "Unreadable Notebook" does not say what to fix.
        None when the file looks fine (the failure was something else).
        """
        try:
            model = await ensure_async(self.manager.get(path, type="file", format="base64", content=True))
            raw = base64.b64decode(model.get("content") or "")
        except (HTTPError, binascii.Error, TypeError, ValueError):
            return None
        return problem(raw, kind)

    async def delete(self, path: str) -> str:
        """Delete a file, a notebook or an *empty* directory (unless the server's ``always_delete_dir``)."""
        path = self.normalize(path)
        kind = await self.kind(path, normalized=True)
        if kind is None:
            raise NotFound(f"nothing at {path!r} to delete")
        if kind == "directory" and not getattr(self.manager, "always_delete_dir", False) and await self._holds(path):
            # Jupyter's contents manager sends a whole tree to the trash on Linux and macOS (it refuses only on
            # Windows, or when not using the trash): one call must not take a tree away.
            raise InvalidArgument(
                f"directory {path!r} is not empty: delete what it holds first (list_documents with "
                f"path_filter {path + '/'!r} shows it)"
            )
        await self._call(self.manager.delete(path), path, action="delete")
        return path

    async def _holds(self, directory: str) -> bool:
        """Whether a directory holds anything, hidden files included (leftover checkpoints do not count)."""
        root = self._root()
        if root is None:  # not a file-system manager: what it lists is all there is
            return bool(await self._children(directory))
        checkpoints = getattr(getattr(self.manager, "checkpoints", None), "checkpoint_dir", None)
        os_path = os.path.join(root, *directory.split("/"))

        def first_entry() -> bool:
            try:
                with os.scandir(os_path) as entries:
                    return any(entry.name != checkpoints for entry in entries)
            except OSError:
                return False  # the manager's own delete reports what is wrong

        return await asyncio.to_thread(first_entry)

    async def _call(self, result: Any, path: str, *, action: str = "change") -> Any:
        try:
            return await ensure_async(result)
        except HTTPError as exc:
            raise translate(exc, path, action=action, root=self._root()) from None
        except OSError as exc:  # some managers let file-system errors through
            raise InvalidArgument(f"cannot {action} {path!r}: {os_reason(exc, self._root())}") from None

    def _root(self) -> str | None:
        root = getattr(self.manager, "root_dir", None)
        return root if isinstance(root, str) else None

    async def last_modified(self, path: str) -> str | None:
        try:
            model = await ensure_async(self.manager.get(path, content=False))
        except HTTPError:
            return None
        return entry_of(model).last_modified

    async def walk(self, start: str, *, accept: Any, max_results: int) -> tuple[list[Entry], bool]:
        """Breadth-first listing under directory ``start``: entries ``accept`` keeps, and truncation.

        Bounded twice — by ``max_results`` and by ``max_directories`` visited — so one call on a
        huge tree stays cheap; ``truncated`` tells the agent to narrow the filter.
        """
        queue: deque[str] = deque([start])
        found: list[Entry] = []
        visited = 0
        while queue:
            if visited >= self.max_directories:
                return found, True
            directory = queue.popleft()
            visited += 1
            for child in await self._children(directory):
                if child.type == "directory" and not self._is_link_outside(child.path):
                    queue.append(child.path)
                if accept(child):
                    if len(found) >= max_results:
                        return found, True
                    found.append(child)
        return found, False

    async def _children(self, directory: str) -> list[Entry]:
        try:
            model = await ensure_async(self.manager.get(directory, content=True, type="directory"))
        except HTTPError as exc:
            raise translate(exc, directory, root=self._root()) from None
        children = [entry_of(m) for m in model.get("content") or []]
        children.sort(key=lambda e: (e.type == "directory", e.name))
        return children

    def _is_link_outside(self, path: str) -> bool:
        try:
            self._check_symlinks(path, path)
        except InvalidPath:
            return True
        return False
