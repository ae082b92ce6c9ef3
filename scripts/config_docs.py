"""Write docs/configuration.md from the extension's traits (tests check the file is current).

Usage: python scripts/config_docs.py [--check]
"""

from __future__ import annotations

import inspect
from pathlib import Path

from generated import write_or_check

from jupyter_pair_mcp.app import JupyterPairMCP

TARGET = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"

HEADER = """# Configuration

Every setting of the extension, generated from its traits (`python scripts/config_docs.py`; a test fails
when this page and the code disagree). Set them in `jupyter_server_config.py`:

```python
c.JupyterPairMCP.read_only = True
c.JupyterPairMCP.tool_groups = ["notebook", "document"]
```

or on the command line: `jupyter lab --JupyterPairMCP.read_only=True`. A list is given on the command
line by repeating the option, one item each:

```
jupyter lab --JupyterPairMCP.tool_groups=notebook --JupyterPairMCP.tool_groups=document
```

`--JupyterPairMCP.tool_groups=notebook,document` and `--JupyterPairMCP.tool_groups='["notebook","document"]'`
do **not** work: Jupyter hands such a value to the extension as one item (`"notebook,document"`). An invalid
`tool_groups` (an unknown group, or one of these forms) is refused: the endpoint is not served, and the server's
log says why (`MCP endpoint not served: invalid JupyterPairMCP.tool_groups = [...]`).

Jupyter's own settings that shape the endpoint: `ServerApp.base_url` (the endpoint is `{base_url}mcp`),
`ServerApp.allow_origin` / `allow_origin_pat` (origins allowed to call it), `ServerApp.allow_remote_access`
and `local_hostnames` (the Host check), `ContentsManager.allow_hidden` (hidden files), the identity
provider and authorizer (who may do what), and `ServerApp.jpserver_extensions` (enable or disable).
"""


def render() -> str:
    lines = [HEADER]
    traits = JupyterPairMCP.class_traits(config=True)
    for name in sorted(traits):
        trait = traits[name]
        if not trait.this_class.__module__.startswith("jupyter_pair_mcp"):
            continue
        default = trait.default_value_repr()
        help_text = inspect.cleandoc(trait.help)
        lines.append(f"## `JupyterPairMCP.{name}`\n\n{type(trait).__name__}, default `{default}`.\n\n{help_text}\n")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(write_or_check(TARGET, render()))
