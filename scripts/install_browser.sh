#!/bin/sh
# Installs Debian's chromium and chromedriver for the trace viewer's browser test
# (tests/trace/test_browser.py), when they are missing and we can.
#
# Idempotent: does nothing when both are present. Never fails the build: when it cannot install
# (not root, no apt-get, no network), it prints a note and exits 0, and the browser test skips
# with its reason. The Python side (selenium) comes from the venv, not from here.
set -u

have() { command -v "$1" >/dev/null 2>&1; }

if have chromium && have chromedriver; then
    exit 0
fi
note() { echo "install_browser.sh: $*; the browser test will be skipped." >&2; exit 0; }
have apt-get || note "chromium/chromedriver are missing and apt-get is not available (not Debian/Ubuntu?)"
[ "$(id -u)" = 0 ] || note "chromium/chromedriver are missing; run as root (or: sudo apt-get install chromium chromium-driver)"

export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when apt does not know the packages yet.
if ! apt-cache show chromium chromium-driver >/dev/null 2>&1; then
    apt-get update -q >/dev/null || note "apt-get update failed"
fi
echo "install_browser.sh: installing chromium and chromium-driver..." >&2
apt-get install -y -q --no-install-recommends chromium chromium-driver >/dev/null \
    || note "apt-get install chromium chromium-driver failed"
have chromium && have chromedriver || note "chromium/chromedriver are still missing after installing"
echo "install_browser.sh: $(chromium --version 2>/dev/null | head -n 1)" >&2
