"""A benchmark-only Jupyter server extension: what holds the server's memory, at ``GET /bench/memory``.

Loaded only by ``bench_soak.py`` (``ServerApp.jpserver_extensions``, with ``benchmarks/`` on the server's
``PYTHONPATH``), never by the product. It answers, for the caller with the server's token:

- ``rss_mb``, and ``trimmed_rss_mb`` with ``?trim=1``: glibc's ``malloc_trim(0)`` run first, so the figure
  without free heap pages the allocator kept (their difference is memory freed but not given back);
- ``stores``: the length of every container reachable from our extension's objects (the session manager's
  and the SDK's included), by attribute path, so a store that grows with calls or sessions shows up;
- ``rooms``: each open collaboration room's encoded document size, awareness clients and awareness metadata;
- ``gc``: the most common object types the garbage collector tracks;
- ``tracemalloc``: ``?trace=start[&frames=N]`` starts tracing (after a warm-up: only growth is traced) and
  keeps a baseline snapshot; ``?trace=compare`` answers the top allocation sites (file:line, with the
  calling frames) by bytes grown since the baseline.
"""

from __future__ import annotations

import asyncio
import collections
import ctypes
import ctypes.util
import gc
import json
import os
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

from jupyter_server.base.handlers import JupyterHandler
from tornado import web

#: Attributes not walked: the server and its configuration are not what grows with calls.
_SKIP = {"serverapp", "parent", "config", "log", "_log", "settings", "web_app", "contents_manager", "_trait_values"}
_DEPTH = 5
_baseline: list[tracemalloc.Snapshot] = []
_tasks: list[Any] = []


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "memprobe"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    serverapp.web_app.add_handlers(".*$", [(r"/bench/memory", MemoryHandler)])
    every = float(os.environ.get("MEMPROBE_TRIM_EVERY", "0") or 0)
    if every > 0:  # an experiment: give free heap back periodically, off the loop (ctypes releases the GIL)

        async def trim() -> None:
            while True:
                await asyncio.sleep(every)
                await asyncio.to_thread(_trim)

        _tasks.append(asyncio.get_event_loop().create_task(trim()))


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _smaps() -> dict[str, float]:
    """Resident MB by kind of mapping: the main heap, anonymous mappings (thread arenas of glibc malloc, Python's
    own arenas, Rust's allocations), files (code, sqlite's memory maps)."""
    kinds: dict[str, float] = {}
    kind = "other"
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
            name = fields[5] if len(fields) > 5 else ""
            kind = (
                "heap"
                if name == "[heap]"
                else "anon"
                if not name
                else "stack"
                if name.startswith("[stack")
                else "file"
                if name.startswith("/")
                else "other"
            )
        elif fields and fields[0] == "Rss:":
            kinds[kind] = kinds.get(kind, 0.0) + int(fields[1]) / 1024
    return {k: round(v, 1) for k, v in kinds.items()}


def _trim() -> None:
    name = ctypes.util.find_library("c")
    if name:
        ctypes.CDLL(name).malloc_trim(0)


def _extension(serverapp: Any) -> Any:
    point = serverapp.extension_manager.extension_points.get("jupyter_pair_mcp")
    return getattr(point, "app", None)


def _walk(root: Any, prefix: str) -> dict[str, int]:
    """len() of every container reachable from ``root`` through instance attributes (depth-bounded)."""
    found: dict[str, int] = {}
    seen: set[int] = set()

    def visit(obj: Any, path: str, depth: int) -> None:
        if id(obj) in seen or depth > _DEPTH:
            return
        seen.add(id(obj))
        if isinstance(obj, (dict, list, set, frozenset, tuple, collections.deque)):
            if len(obj):
                found[path] = len(obj)
            if isinstance(obj, dict) and len(obj) < 64:  # small maps of objects: walk their values
                for key, value in list(obj.items()):
                    if not isinstance(value, (str, bytes, int, float)):
                        visit(value, f"{path}[{str(key)[:40]}]", depth + 1)
            return
        attributes = getattr(obj, "__dict__", None)
        if not isinstance(attributes, dict) or type(obj).__module__.startswith(("traitlets", "logging", "tornado")):
            return
        for name, value in list(attributes.items()):
            if name in _SKIP or isinstance(value, (str, bytes, int, float, bool)) or value is None:
                continue
            visit(value, f"{path}.{name}", depth + 1)

    visit(root, prefix, 0)
    return found


#: Stores not reachable from the app's attributes (the endpoint's tools close over them): found by type.
_BY_TYPE = ("Revisions", "TaskStore")


def _find(root: Any, names: tuple[str, ...], depth: int = 16) -> dict[str, Any]:
    """Objects of the named classes reachable from ``root`` (breadth first through every reference: the endpoint's
    tools close over them, and the startup heap is frozen, out of ``gc.get_objects``)."""
    found: dict[str, Any] = {}
    seen = {id(root)}
    level = [root]
    for _ in range(depth):
        following = []
        for obj in level:
            for ref in gc.get_referents(obj):
                if id(ref) in seen or isinstance(ref, (str, bytes, int, float, type)):
                    continue
                seen.add(id(ref))
                name = type(ref).__qualname__
                if name in names and type(ref).__module__.startswith("jupyter_pair_mcp"):
                    found.setdefault(name, ref)
                following.append(ref)
        if len(found) == len(names) or not following:
            break
        level = following
    return found


def _by_type(extension: Any) -> dict[str, int]:
    endpoint = getattr(extension, "_endpoint", None)
    if endpoint is None:
        return {}
    found: dict[str, int] = {}
    for name, obj in _find(endpoint, _BY_TYPE).items():
        found.update(_walk(obj, name))
        if name == "Revisions":
            found["Revisions.size_bytes"] = obj.size
            found["Revisions.memory_bytes"] = sum(m.bytes for m in obj._memories.values())
    return found


def _rooms(serverapp: Any) -> list[dict[str, Any]]:
    point = serverapp.extension_manager.extension_points.get("jupyter_server_ydoc")
    ydoc_app = getattr(point, "app", None)
    server = getattr(ydoc_app, "ywebsocket_server", None)
    rooms = []
    for name, room in list(getattr(server, "rooms", {}).items()):
        entry: dict[str, Any] = {"room": name[:60], "clients": len(getattr(room, "clients", []) or [])}
        ydoc = getattr(room, "ydoc", None)
        if ydoc is not None:
            entry["ydoc_bytes"] = len(ydoc.get_update())
        awareness = getattr(room, "awareness", None)
        if awareness is not None:
            entry["awareness_states"] = len(getattr(awareness, "states", {}) or {})
            entry["awareness_meta"] = len(getattr(awareness, "meta", getattr(awareness, "_meta", {})) or {})
        rooms.append(entry)
    return rooms


def _gc_types(top: int = 25) -> list[tuple[str, int]]:
    counts = Counter(type(o).__qualname__ for o in gc.get_objects())
    return counts.most_common(top)


def _trace(action: str, frames: int, top: int = 25) -> dict[str, Any]:
    if action == "start":
        if tracemalloc.is_tracing():
            tracemalloc.stop()
        tracemalloc.start(frames)
        _baseline[:] = [tracemalloc.take_snapshot()]
        return {"tracing": True, "frames": frames}
    if not tracemalloc.is_tracing() or not _baseline:
        return {"tracing": False}
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    stats = snapshot.compare_to(_baseline[0], "traceback")
    traced, peak = tracemalloc.get_traced_memory()
    return {
        "traced_mb": round(traced / 2**20, 1),
        "peak_mb": round(peak / 2**20, 1),
        "top": [
            {
                "kib": round(stat.size_diff / 1024, 1),
                "count": stat.count_diff,
                "where": [f"{Path(f.filename).name}:{f.lineno}" for f in stat.traceback][:frames],
            }
            for stat in stats[:top]
        ],
    }


def _referrers(obj: Any, skip: set[int]) -> list[Any]:
    found: list[Any] = []
    skip.add(id(found))
    everything = gc.get_referrers(obj)
    skip.add(id(everything))
    for referrer in everything:
        if id(referrer) in skip or type(referrer).__name__ in ("frame", "cell", "function"):
            continue
        found.append(referrer)
    return found


def _label(obj: Any) -> str:
    if isinstance(obj, dict):
        for owner in gc.get_referrers(obj):
            if getattr(owner, "__dict__", None) is obj:
                return f"{type(owner).__module__}.{type(owner).__qualname__}.__dict__"
        return f"dict({len(obj)}: {', '.join(map(str, list(obj)[:4]))[:80]})"
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _holders(type_name: str, limit: int = 4, depth: int = 6) -> dict[str, Any]:
    """How many live objects of ``type_name`` there are, and what holds a few of them (referrer chains)."""
    objects = gc.get_objects()
    found = [o for o in objects if f"{type(o).__module__}.{type(o).__qualname__}".endswith(type_name)]
    chains: list[list[str]] = []
    skip = {id(objects), id(found), id(chains)}
    for index in range(0, len(found), max(1, len(found) // limit)):
        chain: list[str] = []
        skip.add(id(chain))
        current = found[index]
        for _ in range(depth):
            referrers = _referrers(current, skip)
            if not referrers:
                break
            current = referrers[0]
            chain.append(_label(current))
        chains.append(chain)
        if len(chains) >= limit:
            break
    return {"count": len(found), "held_by": chains}


class MemoryHandler(JupyterHandler):  # type: ignore[misc]
    @web.authenticated  # type: ignore[untyped-decorator]
    def get(self) -> None:
        report: dict[str, Any] = {}
        trace = self.get_argument("trace", "")
        if trace:
            report["tracemalloc"] = _trace(trace, int(self.get_argument("frames", "6")))
        if self.get_argument("stores", "1") == "1":
            gc.collect()
            extension = _extension(self.serverapp)
            report["stores"] = _walk(extension, "app") if extension is not None else {}
            report["stores"].update(_by_type(extension))
            report["rooms"] = _rooms(self.serverapp)
            report["gc"] = _gc_types()
        holders = self.get_argument("holders", "")
        if holders:
            report["holders"] = {name: _holders(name) for name in holders.split(",")}
        report["rss_mb"] = round(rss_mb(), 1)
        report["smaps_mb"] = _smaps()
        if self.get_argument("trim", "0") == "1":
            started = time.perf_counter()
            _trim()
            report["trim_ms"] = round((time.perf_counter() - started) * 1000, 1)
            report["trimmed_rss_mb"] = round(rss_mb(), 1)
            report["trimmed_smaps_mb"] = _smaps()
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(report))
