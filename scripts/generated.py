"""Shared by the doc generators: write a generated page, or with --check report whether it is current."""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(target: Path, text: str) -> int:
    if "--check" in sys.argv:
        return 0 if target.read_text() == text else 1
    target.write_text(text)
    return 0
