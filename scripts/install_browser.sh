#!/usr/bin/env bash
# Installs the headless browser the browser test drives (tests/python/test_browser.py):
# Debian's chromium and chromium-driver (and a font, for readable screenshots). Does nothing
# when chromium and chromedriver are already there.
# Runs apt-get directly as root, through sudo otherwise (when sudo exists).
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  echo "install_browser: chromium and chromedriver present ($(chromium --version 2>/dev/null || echo '?'))"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_browser: no apt-get here; install chromium and chromedriver by hand (the browser test skips without them)" >&2
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install_browser: not root and no sudo; cannot install chromium (the browser test will skip)" >&2
  exit 0
fi

echo "install_browser: installing chromium and chromium-driver with apt-get"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null
echo "install_browser: $(chromium --version)"
