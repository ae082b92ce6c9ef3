"""One factor for every deadline of the suite: each is written as an idle machine's seconds.

Every deadline the suite's helpers put on a condition (``within``, ``until`` and the waits built on it, a
collaborator's ``wait_until``) is a safety net, never the synchronization. It is multiplied by the ``patience``
ini option (pyproject.toml; tests/timeouts.py reads it at configure time), so that a loaded machine does not
turn a slow save into a failure: ``-o patience=5`` gives a slower machine more.
"""

from __future__ import annotations

PATIENCE = 3.0  # the default: two cores that also run two other CPU-heavy processes


def patient(seconds: float) -> float:
    """A deadline of ``seconds`` on an idle machine, on this one."""
    return seconds * PATIENCE
