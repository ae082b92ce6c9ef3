#!/usr/bin/env bash
# Install everything the tests need from the project's own files, then run every check:
# ruff (lint + format), mypy (strict), the JupyterLab extension's build, lint (eslint, prettier,
# stylelint) and jest tests (npm), and pytest (unit, integration against real Jupyter servers, and the
# official MCP conformance suite from npm). Fails when any of them fails.
# Each step announces itself (pip shows its own progress); the tests take about 8-10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "1/6 installing the package and its test extra (pip; builds the JupyterLab extension when Node is there)"
python -m pip install --disable-pip-version-check -e ".[test]"
step "2/6 installing the MCP conformance suite (npm)"
npm ci --prefix conformance --no-audit --no-fund --loglevel=error

step "3/6 JupyterLab extension: install, build, lint, jest (npm)"
npm ci --no-audit --no-fund --loglevel=error
npm run --silent build:prod
npm run --silent lint:check
npm test --silent
step "4/6 ruff (lint and format)"
ruff check .
ruff format --check .
step "5/6 mypy (strict)"
mypy
step "6/6 pytest (about 8-10 minutes on 2 cores)"
python -m pytest "$@"
