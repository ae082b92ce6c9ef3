#!/usr/bin/env bash
# Install everything the tests need from the project's own files, then run every check:
# ruff (lint + format), mypy (strict), and pytest (unit, integration against real Jupyter servers,
# and the official MCP conformance suite from npm). Fails when any of them fails.
set -euo pipefail
cd "$(dirname "$0")/.."

python -m pip install --quiet --disable-pip-version-check -e ".[test]"
npm ci --prefix conformance --no-audit --no-fund --loglevel=error

ruff check .
ruff format --check .
mypy
python -m pytest "$@"
