#!/usr/bin/env bash
# Creates .venv and installs devil-dataset with every extra, pinned by constraints.txt.
# Usage: ./scripts/install.sh            (idempotent: re-running only checks the environment)
#        DEVIL_REINSTALL=1 ./scripts/install.sh   (run pip again even if nothing it reads has changed)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# pip runs only when what it installs from changed since the last successful install (the package is editable,
# so source changes need no reinstall); the stamp holds a digest of those files and of the interpreter.
STAMP=.venv/.devil-install-stamp
WANT=$( { cat setup.cfg pyproject.toml constraints.txt; .venv/bin/python -VV; } | sha256sum | cut -d' ' -f1)
if [ "${DEVIL_REINSTALL:-0}" != 1 ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
  echo "install: .venv is up to date with setup.cfg and constraints.txt (DEVIL_REINSTALL=1 reinstalls)"
else
  rm -f "$STAMP"
  # Earlier versions installed opencv-contrib-python-headless (and scenedetect pulled opencv-python): two owners
  # of cv2/. Remove them from an existing .venv so opencv-python-headless is the only one (README dependency table).
  .venv/bin/python -m pip uninstall -q -y opencv-python opencv-contrib-python opencv-contrib-python-headless scenedetect 2>/dev/null || true
  # constraints.txt pins torch/torchvision as a matching pair (see README "Install").
  .venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[all,test]"
  echo "$WANT" > "$STAMP"
fi
.venv/bin/python -c "import torch, torchvision, cv2, datasets, devil_dataset; print('devil-dataset', devil_dataset.__version__, '| torch', torch.__version__, '| opencv', cv2.__version__, '| datasets', datasets.__version__)"
