# Recipes run inside the project's uv environment (`./dev RECIPE` bootstraps uv first).
# `./dev` passes the uv it found (a binary on PATH, or `python3 -m uv`) in QUIPU_UV.
uv := env_var_or_default("QUIPU_UV", "uv")

default: check test

# Start the HTTP service on ./quipu.db at 127.0.0.1:3030 (pass --db, --bind, --read-only, --config)
serve *args:
    {{uv}} run quipu-server {{args}}

# A fresh ./quipu-demo.db with a month of an ops world, served at http://127.0.0.1:3030/ui/ (pass --db, --bind, --force, --no-serve)
demo *args:
    {{uv}} run quipu demo {{args}}

# The whole test suite, on SQLite and then on a throw-away PostgreSQL cluster (scripts/test.sh;
# it first installs SWI-Prolog for the logic memory when swipl is missing)
test *args:
    QUIPU_UV={{uv}} sh scripts/test.sh {{args}}

# The owl extra's job alone (run by `test` too): OWL tests and the registry pins in .venv-owl
test-owl *args:
    QUIPU_UV={{uv}} sh scripts/test-owl.sh {{args}}

# MCP: `just mcp test` runs the protocol-level acceptance suite over HTTP and stdio (pytest args after it)
mcp action *args:
    @if [ "{{action}}" != "test" ]; then echo "just mcp: unknown action '{{action}}' (known: test)" >&2; exit 2; fi
    {{uv}} run pytest tests/acceptance/mcp {{args}}

# Lint, format check and type check
check:
    {{uv}} run ruff check .
    {{uv}} run ruff format --check .
    {{uv}} run mypy

# Format the code
fmt:
    {{uv}} run ruff format .
    {{uv}} run ruff check --fix .

# Benchmarks: `just bench ingest [--large]` prints quipu against its named peers
bench name *args:
    {{uv}} run python -m bench.{{name}} {{args}}

# Regenerate quipu/mcp/handshake.json, the answers `quipu mcp` gives before its app is built,
# from the live server (tests/mcp/test_handshake.py checks it): after a tool, route or SDK change
handshake:
    {{uv}} run python -m quipu.mcp.handshake

# Regenerate docs/tools.md from the MCP tool registry (tests/mcp/test_tools_doc.py checks it)
tools-doc:
    {{uv}} run python -m quipu.mcp.docs --write docs/tools.md
