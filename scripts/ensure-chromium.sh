#!/bin/sh
# Make sure a Chromium is available for the explorer's browser tests (tests/ui), which drive it
# with Playwright's Python package and never download a browser of their own.
# Idempotent: does nothing when chromium (or QUIPU_CHROMIUM) is there. Otherwise installs
# Debian's chromium with apt-get (as root, or through sudo); elsewhere it prints how to install
# it and fails, and the browser tests skip (or fail under CI=true).
set -eu

if [ -n "${QUIPU_CHROMIUM:-}" ] && [ -x "$QUIPU_CHROMIUM" ]; then
    exit 0
fi
for name in chromium chromium-browser; do
    if command -v "$name" >/dev/null 2>&1; then
        exit 0
    fi
done

install_apt() {
    $1 apt-get install -y --no-install-recommends chromium \
        || { $1 apt-get update && $1 apt-get install -y --no-install-recommends chromium; }
}

if command -v apt-get >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ]; then
        install_apt "" >&2
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        install_apt "sudo" >&2
    fi
fi

if command -v chromium >/dev/null 2>&1; then
    exit 0
fi

cat >&2 <<'MSG'
Chromium was not found; the explorer's browser tests (tests/ui) need it.
Install it with one of:
  Debian/Ubuntu:  sudo apt-get install --no-install-recommends chromium
  Fedora:         sudo dnf install chromium
  macOS:          brew install --cask chromium
or set QUIPU_CHROMIUM to the path of a Chromium or Chrome executable.
MSG
exit 1
