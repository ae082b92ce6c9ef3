"""Benchmark: what a replace of many matches and a merge of a huge cell cost the event loop (pycrdt, no server).

python benchmarks/bench_replace.py [--matches 20000,40000,650000] [--old] [--json out.json]

A replace is planned in a worker thread (adapters/rooms/replace.py: CPU there does not hold the loop) and applied on
the loop (``apply_hunks``: at most ``ops_budget`` Y text operations); a merge with ``base_revision`` runs
``diff`` + ``rebase`` + ``apply_hunks`` on the loop. Figures are CPU seconds of the thread doing the work.
``--old`` also times the former replace, one delete and one insert per match, last first, in one
transaction, for the match counts up to 40,000 (650,000 would take hours).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pycrdt import Doc, Text  # noqa: E402

from jupyter_pair_mcp.adapters.rooms.merge import apply_hunks, diff, ops_budget, rebase  # noqa: E402
from jupyter_pair_mcp.adapters.rooms.replace import plan_text  # noqa: E402


def fresh(source: str) -> tuple[Doc, Text]:
    doc = Doc()
    text = doc.get("source", type=Text)
    text += source
    return doc, text


def replace(matches: int, old: bool) -> dict[str, Any]:
    source = "x\n" * matches
    started = time.thread_time()
    planned = plan_text(source, re.compile("x"), "yy", literal=True)
    plan_cpu = time.thread_time() - started
    doc, text = fresh(source)
    started = time.thread_time()
    with doc.transaction():
        apply_hunks(text, source, planned.hunks)
    figures: dict[str, Any] = {
        "matches": matches,
        "plan_cpu_s_in_thread": round(plan_cpu, 3),
        "apply_cpu_ms_on_loop": round((time.thread_time() - started) * 1000, 1),
        "text_operations": 2 * len(planned.hunks),
        "ops_budget": ops_budget(source),
    }
    assert str(text) == source.replace("x", "yy")
    if old and matches <= 40_000:
        doc, text = fresh(source)
        started = time.thread_time()
        with doc.transaction():
            for i in reversed(range(matches)):
                del text[2 * i : 2 * i + 1]
                text.insert(2 * i, "yy")
        figures["old_cpu_s_on_loop"] = round(time.thread_time() - started, 2)
    return figures


def merge(size: int) -> dict[str, Any]:
    base = ("0123456789abcdef" * (size // 16 + 1))[:size]
    agent = "START" + base[5:-5] + "!!END"
    live = base[: size // 2] + "PERSON" + base[size // 2 :]
    doc, text = fresh(live)
    started = time.thread_time()
    hunks = rebase(base, diff(base, agent), live)
    with doc.transaction():
        apply_hunks(text, live, hunks)
    cpu = time.thread_time() - started
    assert str(text) == agent[: size // 2] + "PERSON" + agent[size // 2 :]
    return {"size": size, "merge_cpu_ms_on_loop": round(cpu * 1000, 1), "hunks": len(hunks)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matches", default="20000,40000,650000")
    parser.add_argument("--old", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = {
        "replace": [replace(int(n), args.old) for n in args.matches.split(",")],
        "merge": [merge(size) for size in (1_000_000, 3_900_000)],
    }
    for row in results["replace"] + results["merge"]:
        print(json.dumps(row))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
