#!/usr/bin/env bash
# Make sure Debian's headless Chromium (the package chromium-headless-shell) is installed, for the browser
# tests (tests/browser/). It comes from the system package manager, never as a browser download. Runs
# apt-get as root, or through a sudo that asks for no password; refreshes the package lists only when the
# package is not in them yet. Never fails the caller: when the browser cannot be installed it says why, and
# the browser tests then skip with that reason (or fail, when REQUIRE_BROWSER=1, as in CI).
set -uo pipefail

PACKAGE=chromium-headless-shell
CANDIDATES=(/usr/lib/chromium/chromium-headless-shell /usr/lib/chromium/headless_shell /usr/bin/chromium-headless-shell)

found() {
  local path
  for path in "${CANDIDATES[@]}"; do
    if [ -x "$path" ]; then
      echo "headless Chromium: $path"
      return 0
    fi
  done
  return 1
}

found && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "headless Chromium not installed and no apt-get here: install Debian's $PACKAGE (or point" \
    "CHROMIUM_HEADLESS_SHELL at a headless Chromium); the browser tests skip without it"
  exit 0
fi
if [ "$(id -u)" = 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  echo "headless Chromium not installed, and installing it needs root (no password-less sudo here):" \
    "run 'apt-get install -y $PACKAGE' as root; the browser tests skip without it"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
# The package lists are refreshed only when they do not know the package yet (a fresh machine's or image's).
if ! apt-cache show "$PACKAGE" >/dev/null 2>&1; then
  "${as_root[@]}" apt-get update -qq || echo "apt-get update failed"
fi
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "$PACKAGE" || echo "apt-get install $PACKAGE failed"
found || echo "headless Chromium could not be installed; the browser tests skip without it"
exit 0
