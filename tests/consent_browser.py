"""A stand-in for the browser an MCP client opens: ``python consent_browser.py <authorization URL>``.

Clients that connect through MCP authorization (mcp-remote, Claude Code's CLI) open the authorization URL with
the system's browser: mcp-remote through the ``open`` package (``xdg-open``, which runs ``$BROWSER`` when there
is no desktop), Claude Code through ``$BROWSER`` itself. Pointed at this script (through a one-line wrapper, as
``BROWSER`` names one executable), it does what a person does, over HTTP, exactly as tests/test_grants.py does:
follows the authorization URL to Jupyter's consent page, logs in to Jupyter with the token in the page's URL
(Jupyter sets its login and XSRF cookies), approves with the page's ``_xsrf`` field, and follows the answer's
redirect to the client's loopback callback. Standard library only, so it runs under any Python.

Environment: ``JUPYTER_TOKEN`` (the person's login), ``CONSENT_LEVEL`` (read, write or execute; default read),
``CONSENT_LOG`` (a file each step is appended to, never the token or the code).
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Each redirect is looked at (and followed) by the script, as a browser's address bar would show it."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _log(line: str) -> None:
    path = os.environ.get("CONSENT_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")


def _redact(url: str) -> str:
    return re.sub(r"(code|token|code_challenge|state)=[^&]+", r"\1=…", url)


def consent(url: str, token: str, level: str) -> str:
    """Approve the request at ``url``; return where the client's callback answered."""
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect())

    def fetch(target: str, data: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        try:
            with browser.open(urllib.request.Request(target, data=body), timeout=30) as answer:
                return answer.status, dict(answer.headers), answer.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as answer:  # 3xx (not followed) and errors
            return answer.code, dict(answer.headers), answer.read().decode("utf-8", "replace")

    status, headers, _ = fetch(url)
    _log(f"GET {_redact(url)} -> {status}")
    if status != 302:
        raise SystemExit(f"the authorization URL answered {status}, not a redirect to the consent page")
    page_url = urllib.parse.urljoin(url, headers["Location"])
    status, _, page = fetch(f"{page_url}&token={urllib.parse.quote(token)}")
    _log(f"GET {_redact(page_url)} (logged in with the token) -> {status}")
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page)
    request = re.search(r'name="request" value="([^"]+)"', page)
    if status != 200 or xsrf is None or request is None:
        raise SystemExit(f"the consent page answered {status} without its form")
    client = re.search(r"<h1>Connect <q>(.*?)</q>", page)
    _log(f"consent page asks for client {client[1] if client else '?'!r}; approving level {level}")
    form = {
        "_xsrf": xsrf[1],
        "request": request[1],
        "decision": "approve",
        "level": level,
        "where": "all",
        "folders": "",
        "expires": "86400",
    }
    status, headers, text = fetch(page_url.split("?")[0], form)
    _log(f"POST consent -> {status}")
    if status != 302:
        raise SystemExit(f"approving answered {status}: {text[:200]}")
    callback = urllib.parse.urljoin(page_url, headers["Location"])
    status, _, _ = fetch(callback)
    _log(f"GET {_redact(callback)} (the client's callback) -> {status}")
    return callback


def main() -> None:
    consent(sys.argv[1], os.environ["JUPYTER_TOKEN"], os.environ.get("CONSENT_LEVEL", "read"))


if __name__ == "__main__":
    main()
