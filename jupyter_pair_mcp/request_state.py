"""Keys of the ASGI scope ``state`` through which tools find the Jupyter request behind a call.

The handler (top of the layers) puts the Tornado handler and the Jupyter user there; the tool
registry and the actors (lower layers) read them. The keys live here, below both, so that reading
them imports nothing from the handler.
"""

from __future__ import annotations

import hashlib
import hmac

STATE_HANDLER = "jupyter_handler"
STATE_USER = "jupyter_user"
STATE_GRANT = "mcp_grant"  # the grant whose token authenticated the request, or None

#: How a grant's tokens start (services/grants.py makes them): never the shape of a Jupyter token.
GRANT_TOKEN_PREFIX = "jpmcp_"


def fingerprint(key: bytes, material: str) -> str:
    """The principal of a credential (``material``: "token:…", "grant:<id>", …): what sessions, tasks and
    per-principal limits are bound to, and never the credential itself."""
    return hmac.new(key, material.encode(), hashlib.sha256).hexdigest()
