"""The generated reference pages match the code, so they cannot drift."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("script", ["config_docs.py", "tools_docs.py"])
def test_generated_docs_are_current(script: str) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), "--check"], capture_output=True, timeout=60
    )
    assert result.returncode == 0, f"docs out of date: run python scripts/{script}\n{result.stderr.decode()}"


def test_readme_has_the_two_setup_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "pip install -e . && jupyter lab" in readme
    assert "bash scripts/test.sh" in readme
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
