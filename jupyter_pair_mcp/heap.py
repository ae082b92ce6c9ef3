"""Short full garbage collections: the objects alive once the server has started are frozen.

CPython's cyclic garbage collector runs a full collection on whichever thread allocates, at moments nobody
picks, and a full collection walks every tracked object. A Jupyter server with JupyterLab and this extension
holds about 280 000 of them once started (modules, classes, schemas, parsers), so under many agents each
full collection held the event loop 0.2-0.4 s, and ``GET /api/status`` answered in up to 0.6 s
(``benchmarks/bench_load.py``, 100 sessions). Those objects live as long as the process: after one
collection at start they are moved out of the collector's reach (``gc.freeze``), and a full collection walks
only what was made since (0.1-0.16 s under the same load: the live sessions' own objects). A frozen object is
still freed when its last reference goes; only a reference cycle among frozen objects would never be collected.
"""

from __future__ import annotations

import gc
import logging
import time


def freeze_startup_heap(log: logging.Logger) -> int:
    """Collect once, then freeze every object still alive; answers how many are frozen."""
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.info(
        "Froze %d objects alive at start out of full garbage collections in %.2f s (freeze_startup_heap)",
        frozen,
        time.perf_counter() - started,
    )
    return frozen
