"""Benchmark: history listing, reading an old version and restoring, on documents with 1000 versions.

python benchmarks/bench_history.py [--versions 1000] [--iterations 20] [--json out.json]

Builds the history through the endpoint (one agent edit = one version), on a 20-cell notebook and a
text file, then times get_document_history (newest 10 and all 1000), get_document_version of the
oldest version (a full replay), restore_document_version of a middle version, and undo_agent_edits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.jupyter_process import JupyterProcess, RawSession, summary, timed  # noqa: E402
from tests.conftest import notebook_json  # noqa: E402


async def build(raw: RawSession, versions: int) -> float:
    started = time.perf_counter()
    for n in range(versions):
        change = [{"cell_id": f"c{n % 20}", "content": f"v{n % 20} = {n}"}]
        await raw.call("batch_update_notebook_cells", path="nb.ipynb", updates=change, exec=False)
        await raw.call("batch_insert_text", path="doc.txt", operations=[{"text": f"{n}\n", "position": -1}])
    return time.perf_counter() - started


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", type=int, default=1000)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import httpx2

    results: dict[str, Any] = {"versions": args.versions}
    with JupyterProcess() as server:
        cells = [{"cell_type": "code", "source": f"v{i} = {i}", "id": f"c{i}"} for i in range(20)]
        (server.root / "nb.ipynb").write_text(notebook_json(cells))
        (server.root / "doc.txt").write_text("start\n")
        headers = {"Authorization": f"Bearer {server.token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
            raw = RawSession(http, url=f"{server.url}/mcp")
            await raw.open()
            results["build_seconds"] = await build(raw, args.versions)
            await asyncio.sleep(1.0)
            for path in ("nb.ipynb", "doc.txt"):
                listed = await raw.call("get_document_history", path=path, limit=1000)
                ids = [v["version_id"] for v in listed["versions"]]
                key = "notebook" if path.endswith(".ipynb") else "text"
                results[f"{key}_versions_listed"] = listed["total"]
                results[f"{key}_history_newest_10"] = summary(
                    await timed(lambda p=path: raw.call("get_document_history", path=p, limit=10), args.iterations)
                )
                results[f"{key}_history_all"] = summary(
                    await timed(lambda p=path: raw.call("get_document_history", path=p, limit=1000), args.iterations)
                )
                oldest = ids[-1]
                results[f"{key}_read_oldest_version"] = summary(
                    await timed(
                        lambda p=path, v=oldest: raw.call("get_document_version", path=p, version_id=v),
                        args.iterations,
                    )
                )
                middle = ids[len(ids) // 2]
                restores = []
                for _ in range(min(args.iterations, 10)):
                    started = time.perf_counter()
                    await raw.call("restore_document_version", path=path, version_id=middle)
                    restores.append((time.perf_counter() - started) * 1000)
                    await raw.call("undo_agent_edits", path=path)  # back to the newest state for the next run
                results[f"{key}_restore_middle_version"] = summary(restores)

    print(f"history of {args.versions} agent edits per document (built in {results['build_seconds']:.1f} s)")
    for key in ("notebook", "text"):
        print(f"  {key}: {results[f'{key}_versions_listed']} versions listed")
        for name in ("history_newest_10", "history_all", "read_oldest_version", "restore_middle_version"):
            s = results[f"{key}_{name}"]
            print(f"    {name:24s} p50 {s['p50']:7.2f} ms  p95 {s['p95']:7.2f} ms")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
