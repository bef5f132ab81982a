#!/usr/bin/env bash
# Install the test dependencies (pinned) into .venv and tests/clients/node_modules, then run
# the test suite. Extra arguments go to pytest, e.g.  bash tests/run.sh -k wire -x
# MCP_MIN_SLOW=1 enables the long fuzzing and stress runs.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [[ ! -x .venv/bin/python ]]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt
if command -v npm >/dev/null && [[ -f tests/clients/package-lock.json ]]; then
  (cd tests/clients && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
exec .venv/bin/python -m pytest "$@"
