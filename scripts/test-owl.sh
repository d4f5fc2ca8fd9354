#!/bin/sh
# The owl extra's CI job (part of `./dev test`, alone as `./dev test-owl`): in a virtualenv of its
# own (.venv-owl, so the default .venv never gets the extra and keeps serving 77 tools), install
# the project with the `owl` extra and run the OWL tests and the tool registry's pins there. With
# QUIPU_REQUIRE_OWL set a missing extra fails those tests instead of skipping them.
# $1, when given, is a PostgreSQL server URL: the OWL tests then run on it too.
set -eu
cd "$(dirname "$0")/.."
UV=${QUIPU_UV:-uv}
unset VIRTUAL_ENV  # `./dev` runs inside the default environment
export UV_PROJECT_ENVIRONMENT=.venv-owl QUIPU_REQUIRE_OWL=1
$UV sync --frozen --extra owl --quiet
echo "== the owl extra: tests/owl and the registry pins on SQLite" >&2
$UV run --frozen --extra owl pytest -q -p no:cacheprovider tests/owl tests/mcp/test_registry.py
if [ $# -gt 0 ] && [ -n "$1" ]; then
    echo "== the owl extra: tests/owl on PostgreSQL ($1)" >&2
    QUIPU_TEST_DB=$1 $UV run --frozen --extra owl pytest -q -p no:cacheprovider tests/owl
fi
