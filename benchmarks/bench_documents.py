"""Benchmark: text-document edits, subscription notification delay, and what 100 subscriptions cost per change.

python benchmarks/bench_documents.py [--iterations 60] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.jupyter_process import JupyterProcess, RawSession, summary, timed  # noqa: E402
from tests.conftest import notebook_json  # noqa: E402


class Inbox:
    def __init__(self) -> None:
        self.updates: list[float] = []
        self.event = asyncio.Event()

    async def __call__(self, message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            self.updates.append(time.perf_counter())
            self.event.set()


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    results: dict[str, Any] = {}
    with JupyterProcess() as server:
        (server.root / "doc.py").write_text("x = 1\n" * 200)
        cells = [{"cell_type": "code", "source": f"v{i} = {i}", "id": f"c{i}"} for i in range(1000)]
        (server.root / "nb.ipynb").write_text(notebook_json(cells))
        headers = {"Authorization": f"Bearer {server.token}"}
        url = f"{server.url}/mcp"
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            raw = RawSession(http, url)
            await raw.open()
            op = [{"text": "# edit\n", "position": 0}]
            await raw.call("batch_insert_text", path="doc.py", operations=op)
            results["document_edit_raw_http"] = summary(
                await timed(lambda: raw.call("batch_insert_text", path="doc.py", operations=op), args.iterations)
            )
            counter = iter(range(10**9))

            def update() -> Any:
                change = [{"cell_id": "c500", "content": f"v = {next(counter)}"}]
                return raw.call("batch_update_notebook_cells", path="nb.ipynb", updates=change, exec=False)

            await update()
            before = await timed(update, args.iterations)

            inbox = Inbox()
            async with Client(streamable_http_client(url, http_client=http), mode="legacy", message_handler=inbox) as c:
                await c.subscribe_resource("notebook://nb.ipynb")
                for i in range(99):  # 100 subscriptions on the notebook: the whole doc and 99 cells
                    await c.subscribe_resource(f"notebook://nb.ipynb/cells/c{i * 10}")
                results["notebook_update_100_subscriptions"] = summary(await timed(update, args.iterations))
                await asyncio.sleep(1.0)
                delays = []
                for _ in range(min(args.iterations, 20)):
                    inbox.event.clear()
                    await update()
                    edited = time.perf_counter()
                    await asyncio.wait_for(inbox.event.wait(), 5)
                    delays.append((inbox.updates[-1] - edited) * 1000)
                    await asyncio.sleep(0.6 + random.random() * 0.5)  # a quiet gap: each edit is announced at once
                results["notification_delay_ms"] = summary(delays)
                for i in range(99):
                    await c.unsubscribe_resource(f"notebook://nb.ipynb/cells/c{i * 10}")
                await c.unsubscribe_resource("notebook://nb.ipynb")
            # Baseline measured before and after the subscribed run, so drift on the machine cancels out.
            results["notebook_update_no_subscriptions"] = summary(before + await timed(update, args.iterations))

    base = results["notebook_update_no_subscriptions"]["p50"]
    loaded = results["notebook_update_100_subscriptions"]["p50"]
    results["cost_per_change_with_100_subscriptions_ms"] = loaded - base
    doc = results["document_edit_raw_http"]
    note = results["notification_delay_ms"]
    print(f"document edit (raw HTTP)              p50 {doc['p50']:6.2f} ms  p95 {doc['p95']:6.2f} ms")
    print(f"notebook update, no subscriptions     p50 {base:6.2f} ms")
    print(f"notebook update, 100 subscriptions    p50 {loaded:6.2f} ms  (+{loaded - base:.2f} ms per change)")
    print(
        f"edit -> resources/updated             p50 {note['p50']:6.1f} ms  p95 {note['p95']:6.1f} ms  "
        "(a change after a quiet interval is announced at once)"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
