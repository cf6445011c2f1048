# Sourced by the example scripts: find the interpreter that has pflow-structure installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
pflow_structure() { "$PYTHON" -m pflow_structure "$@"; }
