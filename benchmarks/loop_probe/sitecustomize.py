"""A loop probe for a benchmark's server process (bench_big_reads.py puts this folder on its PYTHONPATH only).

Wraps ``asyncio.events.Handle._run`` as tests/loopmonitor.py does and keeps the longest main-thread step (CPU
seconds); on SIGUSR2 it writes that step to the file ``LOOP_PROBE_OUT`` names and starts over.
"""

import asyncio.events
import json
import os
import signal
import threading
import time
from typing import Any

_original = asyncio.events.Handle._run
_main = threading.main_thread().ident
_longest: dict[str, Any] = {"cpu": 0.0, "what": ""}


def _run(handle: asyncio.events.Handle) -> None:
    if threading.get_ident() != _main:
        _original(handle)
        return
    started = time.thread_time()
    try:
        _original(handle)
    finally:
        spent = time.thread_time() - started
        if spent > _longest["cpu"]:
            _longest.update(cpu=spent, what=repr(handle)[:160])


def _dump(signum: int, frame: Any) -> None:
    out = os.environ["LOOP_PROBE_OUT"]
    with open(out + ".tmp", "w") as file:
        json.dump(_longest, file)
    os.replace(out + ".tmp", out)
    _longest.update(cpu=0.0, what="")


if os.environ.get("LOOP_PROBE_OUT"):
    asyncio.events.Handle._run = _run  # type: ignore[method-assign]
    signal.signal(signal.SIGUSR2, _dump)
