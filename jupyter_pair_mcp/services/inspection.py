"""A notebook kernel's variables, and scratch code run in it: kernel-level work that touches no notebook.

Variables are read the way JupyterLab's variable explorer reads them when it can: the kernel's debug
protocol on the control channel (``inspectVariables``, ``richInspectVariables``), which answers even while
the kernel is busy or stopped at a breakpoint. We use it only when the kernel's debugger is *already
started* (a person switched JupyterLab's debugger on): ipykernel answers ``inspectVariables`` without a
started debugger too, but its variable explorer then keeps a reference to every variable until the next
inspection (a deleted 10 GB frame stays in memory), a side effect we must not impose on a person's kernel.
With the debugger on, JupyterLab already inspects after every execution, so ours adds nothing.

Otherwise, for Python kernels, a silent ``execute_request`` (``silent=True, store_history=False``, empty
code) carries one ``user_expressions`` entry: an expression that runs :data:`KERNEL_CODE` in a fresh
dictionary (no name is bound in the user's namespace, no execution count, no history, no output, no
``pre_run_cell`` hooks) and evaluates to a JSON string of bounded size. It queues behind running code on
the shell channel, so it is bounded by a deadline. A scratch run's outputs are collected by ``scratch_outputs.py``.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

from jupyter_pair_mcp.adapters.kernels.adapter import Execution, KernelsAdapter, drain
from jupyter_pair_mcp.adapters.kernels.messages import receive, send
from jupyter_pair_mcp.errors import InvalidArgument, NotFound, Unavailable
from jupyter_pair_mcp.render import cut
from jupyter_pair_mcp.services.scratch_outputs import OutputCollector

# How long an inspection waits for the kernel (a person's long cell run holds the shell channel).
INSPECT_TIMEOUT = 10.0
# The largest inspection answer we parse (the kernel code bounds itself well below it).
MAX_ANSWER = 4 << 20
# Debugger entries that are groups, not variables.
PSEUDO_VARIABLES = frozenset(("special variables", "function variables", "class variables"))

# Runs inside the kernel, in a dictionary of its own holding ``ns`` (the user's namespace) and ``args``;
# leaves its answer, a JSON string, in ``result``. Reprs are bounded (reprlib for containers, a cut for
# everything), shapes and dtypes are read only from types that declare them (no ``__getattr__`` magic).
KERNEL_CODE = r"""
import collections, json, reprlib, sys, types

def main(ns, args):
    chars = args["chars"]
    brief = reprlib.Repr()
    brief.maxlevel = 3
    brief.maxstring = brief.maxother = chars + 2
    for attr in ("maxlist", "maxtuple", "maxset", "maxfrozenset", "maxdeque", "maxarray"):
        setattr(brief, attr, 100)
    brief.maxdict = 50
    sized = (str, bytes, bytearray, list, tuple, dict, set, frozenset, collections.deque, range)
    hidden = {"In": None, "Out": None, "exit": None, "quit": None, "get_ipython": None, "open": None}
    try:
        shell = sys.modules["IPython"].get_ipython()
        hidden.update(shell.user_ns_hidden)
    except Exception:
        pass
    missing = object()

    def cut(text, limit):
        return text if len(text) <= limit else text[:limit] + "\n[... %d more characters cut]" % (len(text) - limit)

    def shown(name, value):
        if name.startswith("_") or hidden.get(name, missing) is value:
            return False
        if isinstance(value, (types.ModuleType, types.BuiltinFunctionType, types.BuiltinMethodType)):
            return False
        if isinstance(value, (types.FunctionType, type)):
            return getattr(value, "__module__", None) == "__main__"
        return True

    def describe(name, value, limit, detail):
        kind = type(value)
        module = (getattr(kind, "__module__", None) or "builtins").split(".")[0]
        qualname = getattr(kind, "__qualname__", kind.__name__)
        info = {"name": name, "type": qualname if module in ("builtins", "__main__") else module + "." + qualname}
        try:
            if isinstance(value, (types.FunctionType, type)):
                import inspect
                try:
                    text = value.__name__ + str(inspect.signature(value))
                except (TypeError, ValueError):
                    text = "<class %s>" % value.__name__ if isinstance(value, type) else value.__name__ + "(...)"
            elif isinstance(value, str) and len(value) > limit:  # the count says how much of the string is cut
                text = repr(value[:limit]) + "\n[... %d more characters cut]" % (len(value) - limit)
                limit = len(text)
            elif isinstance(value, sized):
                text = brief.repr(value)
            else:
                text = repr(value)
        except Exception as exc:
            text = "<repr failed: %s>" % type(exc).__name__
        info["value"] = cut(text, limit)
        if isinstance(value, sized):
            info["size"] = len(value)
        try:
            if getattr(kind, "shape", None) is not None:
                shape = value.shape
                if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
                    info["shape"] = list(shape)
            if getattr(kind, "dtype", None) is not None:
                info["dtype"] = cut(str(value.dtype), 100)
            if detail and getattr(kind, "dtypes", None) is not None and getattr(kind, "columns", None) is not None:
                pairs = list(value.dtypes.items())
                columns = [cut("%s: %s" % pair, 200) for pair in pairs[:100]]
                if len(pairs) > 100:
                    columns.append("... %d more columns" % (len(pairs) - 100))
                info["columns"] = columns
        except Exception:
            pass
        return info

    if args.get("name") is not None:
        name = args["name"]
        if name not in ns:
            return {"missing": True}
        return {"variable": describe(name, ns[name], chars, True)}
    names = sorted(k for k in list(ns) if isinstance(k, str))
    listed, total = [], 0
    for name in names:
        value = ns.get(name, missing)
        if value is missing or not shown(name, value):
            continue
        total += 1
        if len(listed) < args["limit"]:
            listed.append(describe(name, value, chars, False))
    return {"variables": listed, "total": total}

result = json.dumps(main(ns, args), ensure_ascii=True, default=str)
"""


def user_expression(args: dict[str, Any]) -> str:
    """The one expression that runs :data:`KERNEL_CODE` without binding a name in the user's namespace."""
    return (
        "(lambda d: (__import__('builtins').exec(d['code'], d), d['result'])[1])"
        f"({{'code': {KERNEL_CODE!r}, 'args': {args!r}, 'ns': __import__('builtins').globals()}})"
    )


@dataclass
class Variables:
    variables: list[dict[str, Any]]
    total: int
    via: str  # "debugger" or "kernel"


@dataclass
class Scratch:
    execution: Execution
    outputs: list[dict[str, Any]] = field(default_factory=list)


class KernelInspector:
    """Reads a kernel's variables and runs scratch code in it, through :class:`KernelsAdapter`'s client."""

    def __init__(self, kernels: KernelsAdapter, *, timeout: float = INSPECT_TIMEOUT) -> None:
        self.kernels = kernels
        self.timeout = timeout
        self._control_locks: dict[str, asyncio.Lock] = {}
        self._seq = 0

    # -- variables ------------------------------------------------------------------------------------
    async def variables(self, kernel_id: str, *, limit: int, chars: int) -> Variables:
        """Up to ``limit`` variables (sorted by name), each value cut at ``chars`` characters."""
        if await self._debugger(kernel_id) is not None:
            entries = await self._debug_variables(kernel_id)
            shown = [e for e in entries if e["type"] != "module"]
            return Variables([self._from_debugger(e, chars) for e in shown[:limit]], len(shown), "debugger")
        answer = await self._evaluate(kernel_id, {"limit": limit, "chars": chars, "name": None})
        return Variables(list(answer["variables"]), int(answer["total"]), "kernel")

    async def variable(self, kernel_id: str, name: str, *, chars: int) -> tuple[dict[str, Any], str]:
        """One variable (with a DataFrame's columns); :class:`NotFound` when the kernel has no such name."""
        if not name.isidentifier():
            raise InvalidArgument(f"{name!r} is not a variable name: give a Python identifier (list_variables)")
        debugger = await self._debugger(kernel_id)
        if debugger is not None:
            entry = next((e for e in await self._debug_variables(kernel_id) if e["name"] == name), None)
            text = None
            if not debugger.get("stoppedThreads"):  # stopped at a breakpoint, it wants a frame: the entry will do
                reply = await self._debug(kernel_id, "richInspectVariables", {"variableName": name})
                text = ((reply.get("body") or {}).get("data") or {}).get("text/plain")
            if entry is None and not isinstance(text, str):
                raise NotFound(f"the kernel has no variable {name!r}: list_variables lists them")
            info = self._from_debugger(entry or {"name": name, "type": "", "value": ""}, chars)
            if isinstance(text, str):
                info["value"] = cut(text, chars)
            return info, "debugger"
        answer = await self._evaluate(kernel_id, {"limit": 1, "chars": chars, "name": name})
        if answer.get("missing"):
            raise NotFound(f"the kernel has no variable {name!r}: list_variables lists them")
        return dict(answer["variable"]), "kernel"

    @staticmethod
    def _from_debugger(entry: dict[str, Any], chars: int) -> dict[str, Any]:
        value = cut(str(entry.get("value", "")), chars)
        return {"name": str(entry["name"]), "type": str(entry.get("type", "")), "value": value}

    async def _debug_variables(self, kernel_id: str) -> list[dict[str, Any]]:
        reply = await self._debug(kernel_id, "inspectVariables", {})
        entries = (reply.get("body") or {}).get("variables") or []
        return sorted(
            (e for e in entries if e.get("name") not in PSEUDO_VARIABLES and not str(e.get("name")).startswith("_")),
            key=lambda e: str(e["name"]),
        )

    async def _debugger(self, kernel_id: str) -> dict[str, Any] | None:
        """The ``debugInfo`` of the kernel's debugger when a person's debugger session has started it, else
        None (then the kernel must be a Python one, for the silent request)."""
        info = await self._control(kernel_id, "kernel_info_request", {})
        if "debugger" in (info.get("supported_features") or []) or info.get("debugger") is True:
            body = (await self._debug(kernel_id, "debugInfo", {})).get("body") or {}
            if body.get("isStarted") is True:
                return dict(body)
        self._require_python(info)
        return None

    @staticmethod
    def _require_python(info: dict[str, Any]) -> None:
        language = str((info.get("language_info") or {}).get("name", "")).lower()
        if language != "python":
            raise Unavailable(
                f"the notebook's kernel runs {language or 'an unknown language'}: its variables can only be read "
                "through the kernel's debugger; switch JupyterLab's debugger on for this notebook, then try again"
            )

    async def _debug(self, kernel_id: str, command: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self._seq += 1
        request = {"type": "request", "seq": self._seq, "command": command, "arguments": arguments}
        return await self._control(kernel_id, "debug_request", request)

    async def _control(self, kernel_id: str, msg_type: str, content: dict[str, Any]) -> dict[str, Any]:
        """One request on our client's control channel and its reply (replies of abandoned requests skipped)."""
        client = await self._client(kernel_id)
        lock = self._control_locks.setdefault(kernel_id, asyncio.Lock())
        deadline = time.monotonic() + self.timeout
        async with lock:
            message = client.session.msg(msg_type, content)
            send(client, "control", message)
            while (left := deadline - time.monotonic()) > 0:
                reply = await receive(client.control_channel, min(left, 0.5))
                if reply is not None and reply.get("parent_header", {}).get("msg_id") == message["header"]["msg_id"]:
                    return dict(reply["content"])
        raise Unavailable(
            f"the kernel did not answer a {msg_type} within {self.timeout:g} s: it may be starting or stuck; "
            "try again, or restart it with restart_notebook_kernel"
        )

    async def _evaluate(self, kernel_id: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run :data:`KERNEL_CODE` silently and return its answer (holds the kernel lock: our shell and iopub
        readers must not mix replies)."""
        client = await self._client(kernel_id)
        deadline = time.monotonic() + self.timeout
        lock = self.kernels.lock(kernel_id)
        try:
            await asyncio.wait_for(lock.acquire(), self.timeout)
        except TimeoutError:
            raise self._busy() from None
        try:
            msg_id = client.execute(
                "", silent=True, store_history=False, user_expressions={"v": user_expression(args)}, allow_stdin=False
            )
            reply = await self.kernels.reply(client, msg_id, deadline - time.monotonic())
            with contextlib.suppress(Exception):
                drain(client.iopub_channel)  # the run's status messages: nobody else will read them
        finally:
            lock.release()
        if reply is None:
            raise self._busy()
        result = (reply.get("user_expressions") or {}).get("v") or {}
        if reply.get("status") != "ok" or result.get("status") != "ok":
            failed = result if result.get("status") == "error" else reply
            raise Unavailable(
                f"the kernel could not list its variables ({failed.get('ename', 'error')}: "
                f"{str(failed.get('evalue', ''))[:200]})"
            )
        text = (result.get("data") or {}).get("text/plain", "")
        if not isinstance(text, str) or len(text) > MAX_ANSWER:
            raise Unavailable("the kernel's answer about its variables was too large or malformed")
        try:
            answer = json.loads(ast.literal_eval(text))
        except (ValueError, SyntaxError, TypeError):
            raise Unavailable("the kernel's answer about its variables was malformed") from None
        if not isinstance(answer, dict):
            raise Unavailable("the kernel's answer about its variables was malformed")
        return answer

    def _busy(self) -> Unavailable:
        return Unavailable(
            f"the kernel is busy running code and did not answer within {self.timeout:g} s: try again when it is "
            "idle (interrupt_notebook_kernel stops the run); with JupyterLab's debugger switched on for the "
            "notebook, variables are read even while it runs"
        )

    async def _client(self, kernel_id: str) -> Any:
        try:
            return await self.kernels.client(kernel_id)
        except (KeyError, RuntimeError):
            raise Unavailable(
                "the notebook's kernel is not answering (it died or is starting): try again, or restart it with "
                "restart_notebook_kernel"
            ) from None

    # -- scratch execution ----------------------------------------------------------------------------
    async def run(self, kernel_id: str, code: str, timeout: float) -> Scratch:
        """Run ``code`` with ``store_history=False`` after our queued runs on the kernel; outputs are collected
        here (bounded), never written anywhere."""
        collector = OutputCollector()
        async with self.kernels.lock(kernel_id):
            execution = await self.kernels.execute(kernel_id, code, collector.put, timeout, store_history=False)
        return Scratch(execution, collector.finish())
