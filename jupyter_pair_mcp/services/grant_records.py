"""What a grant is, apart from where it is kept: a person's approval of one client, a consent waiting for the
person, an approved request's code, and the rules their fields follow (levels, folders, names people see).

These records and rules are what the transport (consent page, REST, revocation) and the OAuth provider read
and check; :class:`~jupyter_pair_mcp.services.grants.GrantStore` (``grants.py``) keeps them, persists them and
issues their tokens. Apart so that a reader of a grant need not import its store.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import asdict, dataclass, field
from typing import Any

LEVELS = ("read", "write", "execute")

#: What each level allows, as (action, resource) pairs Jupyter's authorizer would be asked about.
_ALLOWED = {
    "read": {("read", "contents"), ("read", "kernels"), ("read", "sessions")},
    "write": {("read", "contents"), ("read", "kernels"), ("read", "sessions"), ("write", "contents")},
}

#: Characters a client's name may not carry to people's screens: controls and bidi overrides/isolates.
_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)}


def clean_name(name: str, limit: int = 64, fallback: str = "MCP client") -> str:
    """A self-chosen name as people may see it: no control or bidi characters, at most ``limit``; ``fallback``
    when nothing is left."""
    kept = "".join(
        " " if ch in "\t\n\r" else ch
        for ch in name
        if ch in "\t\n\r" or (unicodedata.category(ch)[0] != "C" and ch not in _BIDI)
    )
    return " ".join(kept.split())[:limit].strip() or fallback


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def normalize_folder(folder: str) -> str:
    """A folder as the contents API names it ("work/data"), or raise ValueError."""
    parts = [p for p in folder.strip().replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts or any(any(ord(c) < 32 for c in p) for p in parts):
        raise ValueError(f"folder {folder!r} is not a path inside the Jupyter root")
    return "/".join(parts)


@dataclass
class Grant:
    """One person's approval of one client."""

    id: str
    client_id: str
    client_name: str
    person: str  # the Jupyter username who approved it
    person_name: str  # how people know them ("" when Jupyter knows no name)
    level: str  # read | write | execute
    folders: list[str]  # [""] = the whole server
    propose_only: bool
    created: float
    expires: float
    last_used: float = 0.0
    access: dict[str, float] = field(default_factory=dict)  # token hash -> expiry
    refresh: str = ""  # hash of the one valid refresh token
    resource: str = ""  # the MCP endpoint the tokens are bound to (RFC 8707)
    headless: bool = False  # minted by a person for a script (one long-lived token), not through OAuth
    may_move_view: bool = False  # its person lets it open documents in their JupyterLab (show_in_jupyterlab)

    def allows(self, action: str, resource: str) -> bool:
        """Whether the level covers Jupyter's (action, resource): execute covers everything MCP asks."""
        return self.level == "execute" or (action, resource) in _ALLOWED.get(self.level, set())

    def covers(self, path: str) -> bool:
        """Whether ``path`` (normalized, "" = the root) is inside one of the grant's folders."""
        return any(f == "" or path == f or path.startswith(f + "/") for f in self.folders)

    @property
    def whole_server(self) -> bool:
        return "" in self.folders

    def public(self) -> dict[str, Any]:
        """What people (and REST) see of it: never a token hash."""
        data = asdict(self)
        for secret in ("access", "refresh"):
            data.pop(secret)
        return data


@dataclass
class Pending:
    """An authorization request waiting for the person on the consent page."""

    id: str
    client_id: str
    client_name: str
    redirect_uri: str
    redirect_uri_explicit: bool
    state: str | None
    code_challenge: str
    resource: str
    created: float


@dataclass
class Code:
    """An approved request: the authorization code's hash and what it becomes."""

    grant_id: str
    client_id: str
    redirect_uri: str
    redirect_uri_explicit: bool
    code_challenge: str
    resource: str
    expires: float
