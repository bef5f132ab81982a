#!/usr/bin/env bash
# Install the third-party peers of the benchmarks (bench.py, http_bench.py) into a cache
# OUTSIDE the project.
#
# Nothing here becomes a dependency of mcp_min: each Python peer gets its own
# clean virtual environment, the TypeScript peer its own node_modules.
#
#   MCP_MIN_BENCH_CACHE   where to install (default ~/.cache/mcp-min-bench)
#   PYTHON                interpreter the venvs are made from (default python3);
#                         use the same one you run bench.py with
#
# Re-running is cheap: existing venvs are reused and pip/npm skip what is there.
set -euo pipefail

CACHE="${MCP_MIN_BENCH_CACHE:-$HOME/.cache/mcp-min-bench}"
PYTHON="${PYTHON:-python3}"

MCP_VERSION=2.3.0
FASTMCP_VERSION=4.2.3
GUNICORN_VERSION=27.0.1  # the engines that serve mcp_min's server.wsgi in http_bench.py
GRANIAN_VERSION=2.8.7
TS_SDK_VERSION=1.32.2
ZOD_VERSION=4.6.7  # the SDK takes zod ^3.25 or ^4

mkdir -p "$CACHE"
# Resolve shims (pyenv) to the real interpreter so every venv points at it.
PYTHON_REAL="$("$PYTHON" -c 'import sys; print(sys.executable)')"

python_peer() {  # python_peer VENV_NAME REQUIREMENT...
    local venv="$CACHE/$1"
    if [ ! -x "$venv/bin/python" ]; then
        echo "== creating $venv"
        "$PYTHON_REAL" -m venv "$venv"
    fi
    shift
    echo "== installing $* into $venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}

python_peer venv-sdk "mcp==$MCP_VERSION"
python_peer venv-fastmcp "fastmcp==$FASTMCP_VERSION"
# mcp_min itself needs no install: only the engines that serve it over HTTP
python_peer venv-engines "gunicorn==$GUNICORN_VERSION" "granian==$GRANIAN_VERSION"

if command -v npm >/dev/null 2>&1; then
    echo "== installing @modelcontextprotocol/sdk@$TS_SDK_VERSION into $CACHE/ts"
    mkdir -p "$CACHE/ts"
    (
        cd "$CACHE/ts"
        [ -f package.json ] || echo '{"name": "mcp-min-bench-ts", "private": true}' > package.json
        npm install --silent --no-audit --no-fund --save-exact \
            "@modelcontextprotocol/sdk@$TS_SDK_VERSION" "zod@$ZOD_VERSION"
    )
else
    echo "== npm not found: skipping the ts peer"
fi

echo "== done: peers installed under $CACHE"
