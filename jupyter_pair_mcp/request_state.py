"""Keys of the ASGI scope ``state`` through which tools find the Jupyter request behind a call.

The handler (top of the layers) puts the Tornado handler and the Jupyter user there; the tool
registry and the actors (lower layers) read them. The keys live here, below both, so that reading
them imports nothing from the handler.
"""

from __future__ import annotations

STATE_HANDLER = "jupyter_handler"
STATE_USER = "jupyter_user"
