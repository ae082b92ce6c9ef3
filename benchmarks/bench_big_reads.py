"""Benchmark: what a replace spread over many cells, reading back big outputs and running one cost the server.

python benchmarks/bench_big_reads.py [--cases replace,json,plain,png,html,stream,json-spread,html-spread,run]
                                     [--json out.json]

Issue 31 item 3. Per call: the server's CPU (its process, all threads) and the longest step of its event loop
(CPU of the main thread, measured inside the server by ``benchmarks/loop_probe``). Cases: ``replace``, 500
matches in each of 200 cells and 100 000 in one cell; ``json``, ``plain``, ``png``, ``html``, ``stream``, a notebook
holding one ~12 MB output of that kind, opened and then read back through every reading path (``get_notebook``,
the outline, search, ``notebook://`` reads, the ``explain_cell_output`` prompt, a cell subscription,
``get_document_version``); ``json-spread``, ``html-spread``, the same 12 MB over 300 cells; ``run``, a kernel
displaying a 12 MB ``application/json`` figure into a cell, its autosave, a read after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.jupyter_process import JupyterProcess, RawSession, cpu_seconds  # noqa: E402
from tests.conftest import notebook_json  # noqa: E402
from tests.test_adversarial import BIG, DISPLAY_BIG_JSON, SPREAD_OUTPUTS, _big_output  # noqa: E402

CASES = "replace,json,plain,png,html,stream,json-spread,html-spread,run"


def _read_probe(out: Path) -> dict[str, Any] | None:
    return dict(json.loads(out.read_text())) if out.exists() else None


async def longest_step(pid: int, out: Path) -> dict[str, Any]:
    """The server's longest loop step since the last call (the probe starts over)."""
    await asyncio.to_thread(out.unlink, missing_ok=True)
    os.kill(pid, signal.SIGUSR2)
    for _ in range(6000):
        found = await asyncio.to_thread(_read_probe, out)
        if found is not None:
            return found
        await asyncio.sleep(0.01)
    raise RuntimeError("the server's loop probe did not answer")


class Meter:
    def __init__(self, server: JupyterProcess, out: Path) -> None:
        self.server, self.out, self.rows = server, out, []  # type: ignore[var-annotated]

    async def __call__(self, label: str, call: Callable[[], Awaitable[Any]]) -> None:
        await longest_step(self.server.pid, self.out)
        cpu = cpu_seconds(self.server.pid)
        started = time.perf_counter()
        await call()
        wall = time.perf_counter() - started
        cpu = cpu_seconds(self.server.pid) - cpu
        step = await longest_step(self.server.pid, self.out)
        self.rows.append({"case": label, "cpu_s": cpu, "longest_step_ms": step["cpu"] * 1000, "wall_s": wall})
        print(f"{label:46s} CPU {cpu:6.2f} s   longest loop step {step['cpu'] * 1000:7.0f} ms   wall {wall:5.1f} s")


def big_notebook(case: str) -> str:
    if case.endswith("-spread"):
        each = _big_output(case.split("-")[0], BIG // SPREAD_OUTPUTS)
        outputs = [each] * SPREAD_OUTPUTS
    else:
        outputs = [_big_output(case)]
    cells = [
        {"cell_type": "markdown", "source": "# A big output", "id": "head"},
        *(
            {"cell_type": "code", "source": "show()", "id": "big" if i == 0 else f"o{i}", "execution_count": 1,
             "outputs": [output]}
            for i, output in enumerate(outputs)
        ),
        {"cell_type": "code", "source": "x = 1", "id": "after"},
    ]  # fmt: skip
    return notebook_json(cells)


async def run_case(case: str, raw: RawSession, server: JupyterProcess, meter: Meter) -> None:
    if case == "replace":
        cells = [{"cell_type": "code", "source": "x\n" * 500, "id": f"s{i}"} for i in range(200)]
        (server.root / "spread.ipynb").write_text(notebook_json(cells))
        (server.root / "one.ipynb").write_text(notebook_json([{"cell_type": "code", "source": "x\n" * 100_000}]))
        for path, label in (("spread.ipynb", "200 cells x 500 matches"), ("one.ipynb", "1 cell x 100 000 matches")):
            await raw.call("get_notebook_info", path=path)
            await meter(
                f"replace: {label}", lambda p=path: raw.call("replace_in_notebook", path=p, find="x", replace="yy")
            )
        return
    if case == "run":
        cells = [{"cell_type": "code", "source": DISPLAY_BIG_JSON, "id": "big"}, {"cell_type": "code", "source": "1"}]
        (server.root / "run.ipynb").write_text(notebook_json(cells))
        await raw.call("execute_notebook_cell", path="run.ipynb", index=1)  # the kernel's start is not measured
        await meter("run: 12 MB JSON display into a cell", lambda: raw.call("execute_notebook_cell", path="run.ipynb",
                                                                           cell_id="big", timeout=300))  # fmt: skip
        await meter("run: the 3 s after (its autosave)", lambda: asyncio.sleep(3))
        await meter("run: get_notebook after", lambda: raw.call("get_notebook", path="run.ipynb"))
        return
    path = "big.ipynb"
    (server.root / path).write_text(big_notebook(case))
    cell = f"notebook://{path}/cells/big"
    await meter(f"{case}: open (get_notebook_info)", lambda: raw.call("get_notebook_info", path=path))
    explain = {"name": "explain_cell_output", "arguments": {"path": path, "cell_id": "big"}}
    reads: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        ("get_notebook", lambda: raw.call("get_notebook", path=path)),
        ("get_notebook big, images", lambda: raw.call("get_notebook", path=path, cell_ids=["big"],
                                                      include_images=True)),
        ("get_notebook_outline", lambda: raw.call("get_notebook_outline", path=path)),
        ("search_notebook", lambda: raw.call("search_notebook", path=path, query="show")),
        ("read notebook://", lambda: raw.request("resources/read", {"uri": f"notebook://{path}"})),
        ("read notebook:///json", lambda: raw.request("resources/read", {"uri": f"notebook://{path}/json"})),
        ("read notebook:///cells/big", lambda: raw.request("resources/read", {"uri": cell})),
        ("prompt explain_cell_output", lambda: raw.request("prompts/get", explain)),
        ("subscribe notebook:///cells/big", lambda: raw.request("resources/subscribe", {"uri": cell})),
    ]  # fmt: skip
    for label, call in reads:
        await meter(f"{case}: {label}", call)
    version = (await raw.call("get_document_history", path=path))["versions"][0]["version_id"]
    await meter(
        f"{case}: get_document_version", lambda: raw.call("get_document_version", path=path, version_id=version)
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=CASES)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    probe = ROOT / "benchmarks" / "loop_probe"
    inherited = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(probe), str(ROOT), *([inherited] if inherited else [])])
    rows: list[dict[str, Any]] = []
    for case in args.cases.split(","):
        with tempfile.TemporaryDirectory(prefix="jnmcp-probe-") as folder:
            out = Path(folder) / "loop_probe.json"
            os.environ["LOOP_PROBE_OUT"] = str(out)  # read by the server when it starts
            rows += await run_server(case, out)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


async def run_server(case: str, out: Path) -> list[dict[str, Any]]:
    import httpx2

    with JupyterProcess() as server:
        meter = Meter(server, out)
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.token}"}, timeout=600)
        async with http:
            raw = RawSession(http, f"{server.url}/mcp")
            await raw.open()
            await run_case(case, raw, server, meter)
    return list(meter.rows)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
