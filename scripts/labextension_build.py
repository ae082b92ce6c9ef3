"""Build hook function: builds the JupyterLab extension with npm, or skips it when Node is missing.

hatch-jupyter-builder calls this (pyproject.toml, ``build-function``) for every wheel, sdist and editable
build. The server extension needs no browser code, so a machine without Node still installs the package:
the build is skipped with a warning, and the server says at start that the UI is not built. Release builds
set ``JUPYTER_PAIR_MCP_REQUIRE_UI=1`` to fail instead of shipping a wheel without the UI.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

from hatch_jupyter_builder import npm_builder

log = logging.getLogger(__name__)

#: The built extension's metadata: present when the build produced the extension.
BUILT = Path("jupyter_pair_mcp") / "labextension" / "package.json"


def build(target_name: str, version: str, **kwargs: Any) -> None:
    """Run npm_builder when Node and npm are on PATH, else skip with a warning (or fail when required)."""
    required = os.environ.get("JUPYTER_PAIR_MCP_REQUIRE_UI") == "1"
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        message = (
            f"{' and '.join(missing)} not found: the JupyterLab extension of jupyter-pair-mcp is not built "
            "(the server extension works without it; install Node.js 20+ and reinstall to get the UI)"
        )
        if required:
            raise RuntimeError(message)
        log.warning("%s", message)
        return
    npm_builder(target_name, version, **kwargs)
    if required and not BUILT.exists():
        raise RuntimeError(f"the JupyterLab extension build left no {BUILT}")
