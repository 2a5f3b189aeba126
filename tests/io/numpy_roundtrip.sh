#!/bin/sh
# Runs numpy_roundtrip.py with a Python that has NumPy: Debian's
# /usr/bin/python3 first (a pyenv python3 on PATH may lack it). Exits 77,
# which ctest reports as skipped, only if no Python with NumPy exists.
# Usage: numpy_roundtrip.sh NPY_TOOL WORK_DIR
here=$(dirname "$0")
for py in /usr/bin/python3 python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import numpy' >/dev/null 2>&1; then
    exec "$py" "$here/numpy_roundtrip.py" "$@"
  fi
done
echo "numpy_roundtrip: no python3 with numpy found; skipping (install python3-numpy)"
exit 77
