"""Benchmark: an agent that pauses to think, on a big notebook nobody has open in a browser.

The agent opens the notebook (cold: the room loads the file), reads a cell (warm), pauses ``--pause`` seconds
(jupyter_server_ydoc would close such a room a minute after its last use), then reads again. Reports the wall
milliseconds of each read and the re-opens (the server's "Reopening collaboration room" log lines), at each
``--cells`` size. ``--idle`` sets ``room_idle_timeout`` (the default keeps rooms 10 minutes; 30 shows the
re-open it saves).

python benchmarks/bench_paused.py [--cells 20000] [--pause 75] [--idle 600] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.jupyter_process import JupyterProcess, RawSession  # noqa: E402
from tests.conftest import notebook_json  # noqa: E402

OUT = {"output_type": "stream", "name": "stdout", "text": "printed\n"}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", default="20000")
    parser.add_argument("--pause", type=float, default=75.0)
    parser.add_argument("--idle", type=float, default=600.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import httpx2

    results = []
    for cells in (int(c) for c in args.cells.split(",")):
        with JupyterProcess(f"--JupyterPairMCP.room_idle_timeout={args.idle}", startup_timeout=120) as server:
            source = [
                {"cell_type": "code", "source": f"print({i})", "id": f"c{i}", "outputs": [OUT], "execution_count": i}
                for i in range(cells)
            ]
            # language_info as JupyterLab writes it: without it, jupyter-collaboration finds a room reopened from its
            # history out of sync with the file (it adds the key on load) and loads the file again.
            (server.root / "big.ipynb").write_text(notebook_json(source, language_info={"name": "python"}))
            headers = {"Authorization": f"Bearer {server.token}"}
            async with httpx2.AsyncClient(headers=headers, timeout=1800) as http:
                raw = RawSession(http, f"{server.url}/mcp")
                await raw.open()
                figures: dict[str, float] = {"cells": cells}
                for name, pause in (("open", 0.0), ("warm read", 0.0), ("read after pause", args.pause)):
                    await asyncio.sleep(pause)
                    started = time.perf_counter()
                    read = await raw.call("get_notebook", path="big.ipynb", start_index=cells - 1, end_index=cells)
                    figures[name] = round((time.perf_counter() - started) * 1000, 1)
                    assert read["cells"][0]["id"] == f"c{cells - 1}", read
            log = (server.root.parent / "server.log").read_text(errors="replace")
            figures["reopens"] = log.count("Reopening collaboration room")
            figures["closed"] = log.count("Closed collaboration room")
        print(json.dumps(figures), flush=True)
        results.append(figures)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
