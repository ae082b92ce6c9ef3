"""Let the server process exit: release anyio's idle worker threads when the interpreter shuts down.

anyio runs blocking calls (Jupyter's contents manager reads and writes files with ``anyio.to_thread``)
in non-daemon worker threads, each told to stop when the task it was started under finishes. Under a
Tornado server the loop is stopped, not run to completion: a worker started under a task that is still
pending then (a collaboration room's file watcher, a save still in flight at shutdown) is never told,
and the interpreter waits for it forever — a Jupyter server that does not exit after Ctrl+C or SIGTERM
(seen after a load of agent sessions; the same thread kept a test run from ending). This guard runs in
``threading._shutdown`` before it joins the threads, and sends every anyio worker still alive the
shutdown command its own ``stop()`` would have sent. A busy worker finishes its call first.
"""

from __future__ import annotations

import contextlib
import threading


def release_anyio_workers() -> int:
    """Ask every live anyio worker thread to end after its current call; returns how many were asked."""
    asked = 0
    for thread in threading.enumerate():
        queue = getattr(thread, "queue", None)
        if type(thread).__module__.startswith("anyio.") and queue is not None:
            with contextlib.suppress(Exception):  # a full queue: the worker is busy and ends on its own
                queue.put_nowait(None)
                asked += 1
    return asked


def install() -> None:
    """Register the guard once per process (``threading._register_atexit`` runs before the final join)."""
    register = getattr(threading, "_register_atexit", None)
    registered = getattr(threading, "_threading_atexits", [])
    if register is None or any(getattr(call, "func", call) is release_anyio_workers for call in registered):
        return
    with contextlib.suppress(RuntimeError):  # the interpreter is already shutting down
        register(release_anyio_workers)
