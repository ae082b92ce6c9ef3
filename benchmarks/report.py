"""One run, the whole performance picture: notebook operations by size, and the endpoint's floor and budget.

Runs ``bench_notebook.py`` (op x N with p50/p95 and ratios to 10 cells) and ``bench_endpoint.py`` (native-twin
and ping ratios, tools/list bytes and tokens, a fresh SDK client's first call) one after the other, each in
its own process with its own servers, then prints one summary and, with ``--json``, writes both results.

    python benchmarks/report.py [--sizes 10,100,1000,10000,100000] [--iterations 40] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_notebook import FLAT_OPS, RATIO_TARGETS  # noqa: E402


def run(script: str, *args: str) -> Any:
    """Run one benchmark (it prints its own tables) and return the results it wrote as JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args, "--json", str(out)], check=True)
        return json.loads(out.read_text())


def summary(notebook: list[dict[str, Any]], endpoint: dict[str, Any]) -> None:
    by_size = {r["cells"]: r for r in notebook}
    print("\n=== Summary ===")
    print(f"{'operation':<24}" + "".join(f"{n:>16}" for n in by_size))
    for op in FLAT_OPS:
        cells = "".join(f"{r[op]['p50']:>7.2f} /{r[op]['p95']:>7.2f}" for r in by_size.values())
        print(f"{op:<24}{cells}")
    if 10 in by_size:
        misses = [
            f"{op} at {n}: {by_size[n][op]['p50'] / by_size[10][op]['p50']:.2f}x"
            for op in FLAT_OPS
            for n, limit in RATIO_TARGETS.items()
            if n in by_size and by_size[n][op]["p50"] / by_size[10][op]["p50"] > limit
        ]
        print("flat at any size (p50 vs 10 cells):", "PASS" if not misses else "MISS " + ", ".join(misses))
    figures = endpoint["figures"]
    print(f"tools/list: {figures['tools_list_bytes']:,} bytes (~{figures['tools_list_tokens_est']:,} tokens)")
    print(f"first call of a fresh SDK client: {figures['first_call_fresh_ms']:.1f} ms (slowest tool, median)")
    print(f"cheap call vs native uvicorn twin: {figures['native_ratio']:.2f}x (target <= 1.3)")
    print(f"cheap call vs MCP ping: {figures['ping_ratio']:.2f}x SDK, {figures['ping_ratio_raw_http']:.2f}x raw HTTP")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,100,1000,10000,100000")
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    notebook = run("bench_notebook.py", "--sizes", args.sizes, "--iterations", str(args.iterations))
    endpoint = run("bench_endpoint.py", "--iterations", str(max(args.iterations * 5, 100)))
    summary(notebook, endpoint)
    if args.json:
        args.json.write_text(json.dumps({"notebook": notebook, "endpoint": endpoint}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
