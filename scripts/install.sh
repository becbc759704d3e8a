#!/usr/bin/env bash
# Creates .venv and installs devil-dataset with every extra, pinned by constraints.txt.
# Usage: ./scripts/install.sh            (idempotent: re-running only checks the environment)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# Earlier versions installed opencv-contrib-python-headless (and scenedetect pulled opencv-python): two owners of
# cv2/. Remove them from an existing .venv so opencv-python-headless is the only one (README dependency table).
.venv/bin/python -m pip uninstall -q -y opencv-python opencv-contrib-python opencv-contrib-python-headless scenedetect 2>/dev/null || true
# constraints.txt pins torch/torchvision as a matching pair (see README "Install").
.venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[all,test]"
.venv/bin/python -c "import torch, torchvision, cv2, datasets, devil_dataset; print('devil-dataset', devil_dataset.__version__, '| torch', torch.__version__, '| opencv', cv2.__version__, '| datasets', datasets.__version__)"
