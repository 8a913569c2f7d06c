#!/usr/bin/env bash
# Installs the Debian packages `make test` needs beyond the compiler and Python:
#   clang, libclang-rt-14-dev, libomp-14-dev   the libFuzzer session (scripts/fuzz.sh)
#   chromium, chromium-driver, fonts-dejavu-core   the browser test (tests/python/server/test_browser.py)
# Only the missing ones are installed (apt-get as root, or through sudo). Where that is
# impossible it says so and stops with an error: a test step that needs them would
# otherwise be skipped in silence.
set -euo pipefail

packages=(clang libclang-rt-14-dev libomp-14-dev chromium chromium-driver fonts-dejavu-core)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install_system_deps: all present (${packages[*]})"
  exit 0
fi

if [[ "$(id -u)" -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install_system_deps: missing ${missing[*]}, and this user is not root and has no sudo" >&2
  exit 1
fi
echo "install_system_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
