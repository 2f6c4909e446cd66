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

# One stamp for the environment: the pyproject it was installed from and the extras in it. A
# script that needs extras already installed installs nothing; one that needs more installs the
# union, so `run`, `test`, `package` and `st-e2e` share one installation instead of taking turns.
STAMP="$VENV/.installed"
HASH="$( (sha256sum "$ROOT/pyproject.toml" 2>/dev/null || shasum -a 256 "$ROOT/pyproject.toml") | cut -d' ' -f1)"
OLD_HASH=""
OLD_EXTRAS=""
if [ -f "$STAMP" ]; then
  OLD_HASH="$(sed -n 1p "$STAMP")"
  OLD_EXTRAS="$(sed -n 2p "$STAMP")"
fi
WANT="$(printf '%s\n' "$OLD_EXTRAS" "$EXTRAS" | tr ',' '\n' | sed '/^$/d' | sort -u | paste -sd, -)"
if [ "$OLD_HASH" != "$HASH" ] || [ "$WANT" != "$OLD_EXTRAS" ]; then
  if ! "$VENV/bin/python" -c "import llama_cpp" >/dev/null 2>&1; then
    bash "$ROOT/scripts/check-build-tools.sh"
    echo "==> installing DLE Desktop and its dependencies (building llama.cpp the first time: a few minutes)"
  else
    echo "==> installing DLE Desktop and its dependencies${WANT:+ (extras: $WANT)}"
  fi
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  # setuptools warns at every editable install that a folder named like the package may shadow it:
  # it is this checkout, so say nothing.
  PYTHONWARNINGS="ignore::UserWarning" "$VENV/bin/python" -m pip install --quiet -e "$ROOT${WANT:+[$WANT]}"
  printf '%s\n%s\n' "$HASH" "$WANT" > "$STAMP"
fi
