"""Benchmark: the REST API the JupyterLab extension polls (activity, agents) and a stop/allow round trip.

The activity panel asks for a document's new entries every few seconds while it is shown, and the indicator
asks who may be stopped; both must stay cheap however long the log is and however many cells the notebook
has. Measures GET api/mcp/activity (the newest 50, and a poll with ``after=latest``) and GET api/mcp/agents
with a full activity log (``max_activity_entries``, 1000) on notebooks of 10 and 10000 cells, and one stop
plus allow of an agent.

python benchmarks/bench_rest.py [--iterations 60] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.jupyter_process import JupyterProcess, RawSession, summary, timed  # noqa: E402
from tests.conftest import notebook_json  # noqa: E402

SIZES = (10, 10_000)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import httpx2

    results: dict[str, Any] = {}
    with JupyterProcess() as server:
        for size in SIZES:
            cells = [{"cell_type": "code", "source": f"v{i} = {i}", "id": f"c{i}"} for i in range(size)]
            (server.root / f"nb{size}.ipynb").write_text(notebook_json(cells))
        headers = {"Authorization": f"Bearer {server.token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            raw = RawSession(http, f"{server.url}/mcp")
            await raw.open()
            # A full log: 1000 edits, spread over the documents, each naming the cell it changed.
            for i in range(1000):
                size = SIZES[i % len(SIZES)]
                change = [{"cell_id": f"c{(i * 7) % size}", "content": f"v = {i}"}]
                await raw.call("batch_update_notebook_cells", path=f"nb{size}.ipynb", updates=change, exec=False)
            api = f"{server.url}/api/mcp"
            # Let the rooms' autosaves of those edits finish: saving a 10000-cell notebook holds the server's
            # loop for a while (upstream, issue 25), which would land in whichever request comes next.
            await asyncio.sleep(5)

            async def get(url: str, **params: Any) -> Any:
                response = await http.get(url, params=params)
                response.raise_for_status()
                return response.json()

            for size in SIZES:
                path = f"nb{size}.ipynb"
                latest = (await get(f"{api}/activity", path=path))["latest"]
                results[f"activity_newest_50_{size}_cells"] = summary(
                    await timed(lambda path=path: get(f"{api}/activity", path=path), args.iterations)
                )
                results[f"activity_poll_{size}_cells"] = summary(
                    await timed(
                        lambda path=path, latest=latest: get(f"{api}/activity", path=path, after=latest),
                        args.iterations,
                    )
                )
                results[f"agents_{size}_cells"] = summary(
                    await timed(lambda path=path: get(f"{api}/agents", path=path), args.iterations)
                )
            path = f"nb{SIZES[0]}.ipynb"
            [agent] = [a for a in (await get(f"{api}/agents", path=path))["agents"] if not a["stopped"]]
            xsrf = {"Authorization": f"Bearer {server.token}"}

            async def stop_and_allow() -> None:
                for verb in ("stop", "allow"):
                    response = await http.post(f"{api}/agents/{agent['key']}/{verb}", json={"path": path}, headers=xsrf)
                    response.raise_for_status()

            results["stop_then_allow"] = summary(await timed(stop_and_allow, min(args.iterations, 20)))

    width = max(len(name) for name in results)
    for name, figures in results.items():
        print(f"{name:<{width}}  p50 {figures['p50']:7.2f} ms  p95 {figures['p95']:7.2f} ms")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
