#!/usr/bin/env bash
# Creates .venv with Python 3.11+ and installs the project into it (editable), once per change of
# pyproject.toml. Sourced by scripts/run and scripts/test.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
EXTRAS="${1:-}"

find_python() {
  for cand in "${PYTHON:-}" python3.13 python3.12 python3.11 python3 python; do
    [ -n "$cand" ] || continue
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; raise SystemExit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$cand"; return 0
    fi
  done
  echo "DLE Desktop needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
  return 1
}

if [ ! -x "$VENV/bin/python" ]; then
  PY="$(find_python)"
  echo "==> creating $VENV with $($PY --version)"
  "$PY" -m venv "$VENV"
fi

STAMP="$VENV/.installed${EXTRAS:+-$EXTRAS}"
HASH="$( (cat "$ROOT/pyproject.toml"; echo "$EXTRAS") | sha256sum 2>/dev/null | cut -d' ' -f1 || shasum -a 256 "$ROOT/pyproject.toml" | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$HASH" ]; then
  if ! "$VENV/bin/python" -c "import llama_cpp" >/dev/null 2>&1; then
    bash "$ROOT/scripts/check-build-tools.sh"
    echo "==> installing DLE Desktop and its dependencies (building llama.cpp the first time: a few minutes)"
  else
    echo "==> installing DLE Desktop and its dependencies"
  fi
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  if [ -n "$EXTRAS" ]; then
    "$VENV/bin/python" -m pip install --quiet -e "$ROOT[$EXTRAS]"
  else
    "$VENV/bin/python" -m pip install --quiet -e "$ROOT"
  fi
  echo "$HASH" > "$STAMP"
fi
