#!/bin/sh
# The test command (`./dev test`, and CI through .ci/run): the suite on SQLite, then again on a
# throw-away PostgreSQL cluster (tests/backends.py reads QUIPU_TEST_DB).
#
# - SWI-Prolog is installed first when missing (the logic memory's tests need it).
# - The PostgreSQL half starts its own cluster (scripts/pg-cluster.sh) unless QUIPU_TEST_DB
#   already names a server, and stops it at the end. Without PostgreSQL on the machine the half
#   is skipped with a message; under CI=true that is a failure.
# - Arguments go to both pytest runs. With none, the PostgreSQL half runs PG_SUITE: everything
#   but the logic memory's own tests, which never open a quad store (its REST routes are in
#   tests/rest and run on both).
set -u
cd "$(dirname "$0")/.."
UV=${QUIPU_UV:-uv}

PG_SUITE="tests --ignore=tests/logic --ignore=tests/acceptance/logic"

sh scripts/ensure-swipl.sh || exit 1

echo "== the suite on SQLite" >&2
$UV run pytest "$@"
sqlite_status=$?

scratch=""
stop_cluster() {
    if [ -n "$scratch" ]; then
        sh scripts/pg-cluster.sh stop "$scratch/cluster"
        rmdir "$scratch" 2>/dev/null || true
    fi
}
trap stop_cluster EXIT INT TERM

pg_url=${QUIPU_TEST_DB:-}
if [ -z "$pg_url" ]; then
    scratch=$(mktemp -d /tmp/quipu-pg.XXXXXX)
    chmod 711 "$scratch"  # the server runs as postgres when we are root: it must reach its directory
    if ! pg_url=$(sh scripts/pg-cluster.sh start "$scratch/cluster"); then
        if [ "${CI:-}" = "true" ]; then
            echo "== PostgreSQL half: no throw-away cluster could be started, and CI=true makes that a failure" >&2
            exit 1
        fi
        echo "== PostgreSQL half SKIPPED: no throw-away cluster could be started (install PostgreSQL, or set QUIPU_TEST_DB)" >&2
        exit $sqlite_status
    fi
fi

echo "== the suite on PostgreSQL ($pg_url)" >&2
if [ $# -gt 0 ]; then
    QUIPU_TEST_DB=$pg_url $UV run pytest "$@"
else
    # shellcheck disable=SC2086 # PG_SUITE is a list of paths
    QUIPU_TEST_DB=$pg_url $UV run pytest $PG_SUITE
fi
pg_status=$?

if [ $sqlite_status -ne 0 ]; then
    exit $sqlite_status
fi
exit $pg_status
