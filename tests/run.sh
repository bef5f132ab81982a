#!/usr/bin/env bash
# Install the test dependencies (pinned) into .venv, tests/clients/node_modules,
# tests/clients/apps/node_modules and tests/clients/inspector/node_modules, then run the test
# suite. Extra arguments go to pytest,
# e.g.  bash tests/run.sh -k wire -x
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
# The MCP Apps host of tests/test_apps_browser.py: AppBridge, esbuild, playwright-core (which
# drives the machine's chromium and downloads no browser)
if command -v npm >/dev/null && [[ -f tests/clients/apps/package-lock.json ]]; then
  (cd tests/clients/apps && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
# The MCP Inspector (tests/test_inspector.py) and a Node 22 to run it: large, so installed again
# only when its lock file changed. Without it (e.g. offline) that test module is skipped.
inspector=tests/clients/inspector
if command -v npm >/dev/null && [[ -f $inspector/package-lock.json ]] &&
   ! cmp -s $inspector/package-lock.json $inspector/node_modules/.installed-lock.json; then
  if (cd $inspector && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
    cp $inspector/package-lock.json $inspector/node_modules/.installed-lock.json
  else
    echo "tests/run.sh: npm ci failed in $inspector; tests/test_inspector.py will be skipped" >&2
  fi
fi
exec .venv/bin/python -m pytest "$@"
