#!/bin/sh
# Make sure SWI-Prolog (swipl) is available for the logic memory (quipu/logic).
# Idempotent: does nothing when swipl is on PATH. Otherwise installs Debian's swi-prolog-nox
# with apt-get (as root, or through sudo); elsewhere it prints how to install it and fails.
set -eu

if command -v swipl >/dev/null 2>&1; then
    exit 0
fi

install_apt() {
    $1 apt-get install -y --no-install-recommends swi-prolog-nox \
        || { $1 apt-get update && $1 apt-get install -y --no-install-recommends swi-prolog-nox; }
}

if command -v apt-get >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ]; then
        install_apt ""
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        install_apt "sudo"
    fi
fi

if command -v swipl >/dev/null 2>&1; then
    exit 0
fi

cat >&2 <<'MSG'
SWI-Prolog (swipl) is required by the logic memory and was not found on PATH.
Install it with one of:
  Debian/Ubuntu:  sudo apt-get install --no-install-recommends swi-prolog-nox
  Fedora:         sudo dnf install pl
  macOS:          brew install swi-prolog
or set QUIPU_SWIPL to the path of a swipl executable.
MSG
exit 1
