#!/usr/bin/env bash
# llama-cpp-python compiles llama.cpp from source the first time: say what is missing before pip
# fails half-way with a compiler error. (CMake is not checked: pip brings its own when the system
# has none.) Exit 1 with what to install; 0 when a C and a C++ compiler are there.
set -uo pipefail
missing=()
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || command -v clang >/dev/null 2>&1 || missing+=("a C compiler")
command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || command -v clang++ >/dev/null 2>&1 || missing+=("a C++ compiler")
if [ ${#missing[@]} -gt 0 ]; then
  {
    echo "DLE Desktop's first install compiles llama.cpp (llama-cpp-python) and needs ${missing[*]}."
    echo "  Debian/Ubuntu:  sudo apt-get install build-essential cmake"
    echo "  Fedora:         sudo dnf install gcc gcc-c++ cmake"
    echo "  macOS:          xcode-select --install"
    echo "Then run this command again."
  } >&2
  exit 1
fi
exit 0
