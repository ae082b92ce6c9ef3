"""Registered clients' secrets, kept as hashes (docs/authorization.md, "Storage").

Dynamic registration (RFC 7591) gives a confidential client a secret that it presents at the token and
revocation endpoints. The grants file keeps only ``sha256:<hex>`` of it, so a copy of the file lets no one
act as a registered client. The MCP SDK's ``ClientAuthenticator`` compares the secret it is given with the
one ``get_client`` returns: :func:`as_presented` gives it the presented secret where that secret's hash is the
stored one, and an unguessable value otherwise, so presenting the stored hash itself fails too.

Pure functions, no HTTP.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

PREFIX = "sha256:"


def hashed(secret: str) -> str:
    return PREFIX + hashlib.sha256(secret.encode()).hexdigest()


def stored_form(info: dict[str, Any]) -> dict[str, Any]:
    """A client's registration as the file keeps it: its secret (if any) hashed, once."""
    secret = info.get("client_secret")
    if not isinstance(secret, str) or not secret or secret.startswith(PREFIX):
        return info
    return {**info, "client_secret": hashed(secret)}


def as_presented(info: dict[str, Any], presented: str | None) -> dict[str, Any]:
    """The registration to authenticate a request against: its secret replaced by ``presented`` when that
    hashes to the stored hash, else by a fresh random value that nothing presented can equal."""
    stored = info.get("client_secret")
    if not isinstance(stored, str) or not stored:
        return info  # a public client (token_endpoint_auth_method "none")
    if presented and hmac.compare_digest(hashed(presented).encode(), stored.encode()):
        return {**info, "client_secret": presented}
    return {**info, "client_secret": secrets.token_hex(32) + "-no-match"}
