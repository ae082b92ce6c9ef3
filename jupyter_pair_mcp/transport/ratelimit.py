"""Per-principal rate limiting: one token bucket per credential, so one caller cannot flood the server.

The endpoint shares Jupyter's event loop with every notebook, kernel and page of the user: a client
sending requests as fast as its connections allow would slow all of them. Each principal (the
credential fingerprint the handler binds sessions to) gets a bucket of ``burst`` tokens refilled at
``rate`` per second; a request takes one, and a request finding none is answered 429 with the seconds
until a token is back. The defaults are far above what one client calling one call after another
reaches (a few hundred calls a second at best), so only floods meet them.

Buckets are kept for the most recent ``max_principals`` principals (least recently seen dropped: a
dropped bucket starts full again, which only ever errs towards admitting).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    updated: float
    refusing: bool = False  # refused since the last admitted request (a burst of refusals is logged once)


class RateLimiter:
    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        max_principals: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be positive and burst at least 1")
        self.rate = rate
        self.burst = burst
        self.max_principals = max_principals
        self.clock = clock  # tests control time through it
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def acquire(self, principal: str) -> tuple[int, bool]:
        """Take a token for ``principal``: ``(0, False)`` when admitted, else ``(seconds to wait, first)``
        where ``first`` is true for the first refusal of a burst (the one worth logging)."""
        now = self.clock()
        bucket = self._buckets.get(principal)
        if bucket is None:
            bucket = self._buckets[principal] = _Bucket(float(self.burst), now)
            while len(self._buckets) > self.max_principals:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(principal)
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.updated) * self.rate)
            bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            bucket.refusing = False
            return 0, False
        first = not bucket.refusing
        bucket.refusing = True
        return max(1, math.ceil((1.0 - bucket.tokens) / self.rate)), first
