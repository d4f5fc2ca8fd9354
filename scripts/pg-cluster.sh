#!/bin/sh
# A throw-away PostgreSQL cluster for the backend tests: `start DIR` initialises one in DIR,
# listening only on a Unix socket inside DIR, and prints its SQLAlchemy URL on stdout;
# `stop DIR` stops it and removes DIR. Nothing of the machine's own clusters is touched.
#
# The server runs as the `postgres` user when started by root (initdb refuses root). Durability
# settings are off: the data is gone at the end of the run anyway, and fsync would only slow it.
# Exit 3 when no PostgreSQL server binaries are installed (the caller decides whether that is fatal).
set -eu

action=${1:-}
dir=${2:-}
if [ -z "$action" ] || [ -z "$dir" ]; then
    echo "usage: $0 start|stop DIR" >&2
    exit 2
fi

find_bindir() {
    if [ -n "${QUIPU_PG_BINDIR:-}" ]; then
        echo "$QUIPU_PG_BINDIR"
        return 0
    fi
    if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
        pg_config --bindir
        return 0
    fi
    for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -r); do
        if [ -x "$candidate/initdb" ]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

as_owner() {
    if [ "$(id -u)" = "0" ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

case "$action" in
start)
    bindir=$(find_bindir) || { echo "pg-cluster: no PostgreSQL server binaries (initdb) found" >&2; exit 3; }
    if [ "$(id -u)" = "0" ] && ! id postgres >/dev/null 2>&1; then
        echo "pg-cluster: running as root, but there is no postgres user to run the server as" >&2
        exit 3
    fi
    mkdir -p "$dir"
    if [ "$(id -u)" = "0" ]; then
        chown postgres "$dir"
    fi
    chmod 700 "$dir"
    as_owner "$bindir/initdb" -D "$dir/data" -U quipu --auth=trust -E UTF8 --locale=C.UTF-8 \
        >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    # Only a socket in $dir: no TCP port to collide with another run on the machine.
    as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c fsync=off \
            -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 \
            -c shared_buffers=256MB" \
        start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
    as_owner "$bindir/createdb" -h "$dir" -U quipu quipu
    echo "postgresql+psycopg://quipu@/quipu?host=$dir"
    ;;
stop)
    if [ -d "$dir/data" ]; then
        bindir=$(find_bindir) || exit 0
        as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
