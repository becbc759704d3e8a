#!/usr/bin/env bash
# Resolve each extra of devil-dataset against binary wheels for the platforms researchers use
# (linux x86_64, linux aarch64 / GH200, macOS arm64), CPython 3.11, without installing anything.
# Needs only the package registry. Usage: scripts/check_platforms.sh [extra ...]  (default: core build train eval demo all)
# Exit status: number of failed (platform, extra) pairs.
set -u
cd "$(dirname "$0")/.."
PIP=${PIP:-python3 -m pip}
EXTRAS=("$@"); [ ${#EXTRAS[@]} -eq 0 ] && EXTRAS=(core build train eval demo all)
# One entry per platform; a comma list gives every tag its wheels may carry (pip does not expand older manylinux tags).
PLATFORMS=(manylinux_2_28_x86_64,manylinux_2_17_x86_64,manylinux2014_x86_64,manylinux2010_x86_64,manylinux1_x86_64
           manylinux_2_28_aarch64,manylinux_2_17_aarch64,manylinux2014_aarch64
           macosx_14_0_arm64,macosx_13_0_arm64,macosx_12_0_arm64,macosx_11_0_arm64)
REQS=$(python3 - <<'PY'
import configparser
c = configparser.ConfigParser(interpolation=None); c.read("setup.cfg")
print(" ".join(l.strip() for l in c["options"]["install_requires"].splitlines() if l.strip()))
PY
)
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for plat in "${PLATFORMS[@]}"; do
  for extra in "${EXTRAS[@]}"; do
    extras_reqs=""
    if [ "$extra" != core ]; then
      extras_reqs=$(python3 - "$extra" <<'PY'
import configparser, sys
c = configparser.ConfigParser(); c.read("setup.cfg")
print(" ".join(l.strip() for l in c["options.extras_require"][sys.argv[1]].splitlines() if l.strip()))
PY
)
    fi
    # shellcheck disable=SC2086
    if out=$($PIP install --dry-run --quiet --only-binary=:all: $(echo "$plat" | sed "s/\([^,]*\)/--platform \1/g; s/,/ /g") --python-version 3.11 \
          --implementation cp --target "$tmp/t" --report "$tmp/r.json" $REQS $extras_reqs 2>&1); then
      n=$(python3 -c "import json;print(len(json.load(open('$tmp/r.json'))['install']))")
      owners=$(python3 -c "import json;print(','.join(sorted(i['metadata']['name'] for i in json.load(open('$tmp/r.json'))['install'] if i['metadata']['name'].lower().startswith('opencv'))))")
      echo "ok   ${plat%%,*} [$extra] $n wheels, cv2 from: $owners"
      case "$owners" in *,*) echo "FAIL ${plat%%,*} [$extra] two OpenCV distributions"; fail=$((fail+1));; esac
    else
      echo "FAIL ${plat%%,*} [$extra]: $(echo "$out" | grep -i error | head -2 | tr '\n' ' ')"; fail=$((fail+1))
    fi
  done
done
exit $fail
