#!/usr/bin/env bash
# Make sure Debian's headless Chromium (the package chromium-headless-shell) is installed, for the browser
# tests (tests/browser/). It comes from the system package manager, never as a browser download. Runs
# apt-get as root, or through a sudo that asks for no password; refreshes the package lists only when the
# package is not in them yet. Never fails the caller: when the browser cannot be installed it says why, and
# the browser tests then skip with that reason (or fail, when REQUIRE_BROWSER=1, as in CI). A browser named
# by CHROMIUM_HEADLESS_SHELL (tests/browser/chromium.py) counts as installed.
set -uo pipefail

PACKAGE=chromium-headless-shell
CANDIDATES=(/usr/lib/chromium/chromium-headless-shell /usr/lib/chromium/headless_shell /usr/bin/chromium-headless-shell)

found() {
  local path
  for path in ${CHROMIUM_HEADLESS_SHELL:+"$CHROMIUM_HEADLESS_SHELL"} "${CANDIDATES[@]}"; do
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
install() { "${as_root[@]}" apt-get install -y -qq --no-install-recommends "$PACKAGE"; }
refresh() { "${as_root[@]}" apt-get update -qq || echo "apt-get update failed"; }
# The package lists are refreshed only when needed: they do not know the package yet (a fresh machine's or
# image's), or they are old enough that the version they name is gone from the archive.
if ! apt-cache show "$PACKAGE" >/dev/null 2>&1; then
  refresh
  install || echo "apt-get install $PACKAGE failed"
elif ! install; then
  refresh
  install || echo "apt-get install $PACKAGE failed"
fi
found || echo "headless Chromium could not be installed; the browser tests skip without it"
exit 0
