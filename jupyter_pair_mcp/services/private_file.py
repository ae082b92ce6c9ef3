"""A JSON file only its owner may read, replaced whole: what the server keeps across a restart of people's
decisions (grants' hashes, stops of grants' agents), in Jupyter's data directory.

Written to a temporary file in the same directory (mode 0600 from its creation), then renamed over the old
one: a reader — or the server starting after a crash — finds the old file or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from typing import Any

log = logging.getLogger(__name__)


def write(path: str, data: Any) -> None:
    """Replace ``path`` by ``data`` as JSON, atomically, readable and writable by its owner only."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    payload = json.dumps(data)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=folder)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(payload)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read(path: str, what: str) -> Any:
    """The JSON in ``path``; None when there is none yet, or it cannot be read (logged: ``what`` names it; the
    file is replaced on the next change)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        log.warning("%s unreadable; starting without them (the file is replaced on the next change)", what)
        return None
