#!/usr/bin/env bash
# Install everything the tests need from the project's own files, then run every check:
# ruff (lint + format), mypy (strict), the JupyterLab extension's build, lint (eslint, prettier,
# stylelint) and jest tests (npm), and pytest (unit, integration against real Jupyter servers, the
# official MCP conformance suite from npm, a real JupyterHub with its proxy from npm, and browser tests in
# Debian's headless Chromium, which is
# installed from the system package manager when missing). Fails when any of them fails.
# Each step announces itself (pip shows its own progress); the tests take about 12 minutes on 2 idle cores and
# about 17 when two other CPU-heavy processes share them (README.md).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "1/7 installing the package and its test extra (pip; builds the JupyterLab extension when Node is there)"
python -m pip install --disable-pip-version-check -e ".[test]"
step "2/7 installing the MCP conformance suite and JupyterHub's configurable-http-proxy (npm)"
npm ci --prefix conformance --no-audit --no-fund --loglevel=error
step "3/7 installing headless Chromium for the browser tests (apt, when missing)"
bash scripts/install_browser.sh
step "4/7 JupyterLab extension: install, build, lint, jest (npm)"
npm ci --no-audit --no-fund --loglevel=error
npm run --silent build:prod
npm run --silent lint:check
npm test --silent
step "5/7 ruff (lint and format)"
ruff check .
ruff format --check .
step "6/7 mypy (strict)"
mypy
step "7/7 pytest (about 12 minutes on 2 idle cores, 17 on busy ones)"
python -m pytest "$@"
