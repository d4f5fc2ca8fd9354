#!/bin/sh
# The test command (`./dev test`, and CI through .ci/run): the suite on SQLite and, at the same
# time, on a throw-away PostgreSQL cluster (tests/backends.py reads QUIPU_TEST_DB).
#
# - SWI-Prolog is installed first when missing (the logic memory's tests need it), and Chromium
#   (Debian's package) for the explorer's browser tests (tests/ui).
# - Each half spreads its tests over worker processes (pytest-xdist, whole modules per worker so
#   that module fixtures start once): QUIPU_TEST_WORKERS per half, default 2. The two halves run
#   side by side, because many tests wait on child processes and sockets: four workers keep two
#   cores busy where two would not.
# - The PostgreSQL half starts its own cluster (scripts/pg-cluster.sh) unless QUIPU_TEST_DB
#   already names a server, and stops it at the end. Without PostgreSQL on the machine the half
#   is skipped with a message; under CI=true that is a failure. Its output is shown when it ends.
# - Arguments go to both pytest runs. With none, the PostgreSQL half runs PG_SUITE: everything
#   but the logic memory's own tests, which never open a quad store (its REST routes are in
#   tests/rest and run on both).
# - With none, the owl extra's job follows the SQLite half (scripts/test-owl.sh): the OWL tests
#   and the tool registry's pins in a virtualenv of their own with the extra, on both backends.
set -u
cd "$(dirname "$0")/.."
UV=${QUIPU_UV:-uv}
WORKERS=${QUIPU_TEST_WORKERS:-2}
PARALLEL="-n $WORKERS --dist loadscope"

PG_SUITE="tests --ignore=tests/logic --ignore=tests/acceptance/logic"

sh scripts/ensure-swipl.sh || exit 1

# Chromium installs in the background while the suite starts: the explorer's browser tests wait
# for QUIPU_CHROMIUM_WAIT to appear (tests/ui/browser.py), then skip without a browser (a failure
# under CI=true). Its output is shown only when it failed.
chromium_log=$(mktemp /tmp/quipu-chromium.XXXXXX)
QUIPU_CHROMIUM_WAIT="$chromium_log.done"
export QUIPU_CHROMIUM_WAIT
( sh scripts/ensure-chromium.sh >"$chromium_log" 2>&1; echo $? >"$chromium_log.tmp"; mv "$chromium_log.tmp" "$QUIPU_CHROMIUM_WAIT" ) &

scratch=""
pg_log=""
pg_pid=""
cleanup() {
    if [ -n "$pg_pid" ]; then
        kill "$pg_pid" 2>/dev/null
        wait "$pg_pid" 2>/dev/null
    fi
    if [ -n "$scratch" ]; then
        sh scripts/pg-cluster.sh stop "$scratch/cluster"
        rmdir "$scratch" 2>/dev/null || true
    fi
    [ -n "$pg_log" ] && rm -f "$pg_log"
    if [ -s "$QUIPU_CHROMIUM_WAIT" ] && [ "$(cat "$QUIPU_CHROMIUM_WAIT")" != "0" ]; then
        echo "== Chromium could not be installed:" >&2
        cat "$chromium_log" >&2
    fi
    rm -f "$chromium_log" "$QUIPU_CHROMIUM_WAIT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pg_url=${QUIPU_TEST_DB:-}
if [ -z "$pg_url" ]; then
    scratch=$(mktemp -d /tmp/quipu-pg.XXXXXX)
    chmod 711 "$scratch"  # the server runs as postgres when we are root: it must reach its directory
    if ! pg_url=$(sh scripts/pg-cluster.sh start "$scratch/cluster"); then
        rmdir "$scratch" 2>/dev/null || true
        scratch=""
        pg_url=""
        if [ "${CI:-}" = "true" ]; then
            echo "== PostgreSQL half: no throw-away cluster could be started, and CI=true makes that a failure" >&2
            exit 1
        fi
        echo "== PostgreSQL half SKIPPED: no throw-away cluster could be started (install PostgreSQL, or set QUIPU_TEST_DB)" >&2
    fi
fi

if [ -n "$pg_url" ]; then
    pg_log=$(mktemp /tmp/quipu-pg-half.XXXXXX)
    echo "== the suite on PostgreSQL ($pg_url), in the background: its report follows the SQLite half's" >&2
    if [ $# -gt 0 ]; then
        QUIPU_TEST_DB=$pg_url $UV run pytest $PARALLEL "$@" >"$pg_log" 2>&1 &
    else
        # shellcheck disable=SC2086 # PG_SUITE and PARALLEL are word lists
        QUIPU_TEST_DB=$pg_url $UV run pytest $PARALLEL $PG_SUITE >"$pg_log" 2>&1 &
    fi
    pg_pid=$!
fi

echo "== the suite on SQLite" >&2
# shellcheck disable=SC2086 # PARALLEL is a word list
$UV run pytest $PARALLEL "$@"
sqlite_status=$?

# The owl extra's job, in its own virtualenv (scripts/test-owl.sh): with the full suite only.
owl_status=0
if [ $# -eq 0 ]; then
    QUIPU_UV=$UV sh scripts/test-owl.sh "$pg_url"
    owl_status=$?
fi

pg_status=0
if [ -n "$pg_pid" ]; then
    wait "$pg_pid"
    pg_status=$?
    pg_pid=""
    echo "== the suite on PostgreSQL ($pg_url)" >&2
    cat "$pg_log"
fi

if [ $sqlite_status -ne 0 ]; then
    exit $sqlite_status
fi
if [ $owl_status -ne 0 ]; then
    exit $owl_status
fi
exit $pg_status
