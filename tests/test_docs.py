"""The generated reference pages match the code, so they cannot drift."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("script", ["config_docs.py", "tools_docs.py"])
def test_generated_docs_are_current(script: str) -> None:
    # The code of this tree, not the installed package's (a git worktree beside an editable install of main).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), "--check"], capture_output=True, timeout=60, env=env
    )
    assert result.returncode == 0, f"docs out of date: run python scripts/{script}\n{result.stderr.decode()}"


def test_readme_has_the_two_setup_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "pip install -e . && jupyter lab" in readme
    assert "bash scripts/test.sh" in readme
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
