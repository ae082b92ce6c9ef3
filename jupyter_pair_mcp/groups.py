"""Tool groups an admin can switch on and off (kept apart so configuration never imports the MCP SDK)."""

from __future__ import annotations

GROUPS = ("notebook", "execution", "document", "history", "awareness")
