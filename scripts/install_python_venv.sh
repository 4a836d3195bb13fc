#!/bin/sh
# Installs Debian's venv module for the interpreter given (default /usr/bin/python3), which `make bench`
# needs to create .venv-opt, the optimised CPython's virtualenv (Debian ships venv and ensurepip apart
# from python3, in python3.X-venv).
#
# Idempotent: does nothing when `PYTHON -m venv` can create a virtualenv with pip. Never fails the
# build: when it cannot install (not root, no apt-get, no network), it prints a note and exits 0, and
# creating the virtualenv then fails with Python's own message.
set -u

python=${1:-/usr/bin/python3}
"$python" -c "import ensurepip, venv" >/dev/null 2>&1 && exit 0
note() { echo "install_python_venv.sh: $*; make bench-optimised cannot create its virtualenv." >&2; exit 0; }
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) ||
    note "$python does not run"
package="python$version-venv"
command -v apt-get >/dev/null 2>&1 || note "$package is missing and apt-get is not available (not Debian/Ubuntu?)"
[ "$(id -u)" = 0 ] || note "$package is missing; run as root (or: sudo apt-get install $package)"

export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when apt does not know the package yet.
if ! apt-cache show "$package" >/dev/null 2>&1; then
    apt-get update -q >/dev/null || note "apt-get update failed"
fi
echo "install_python_venv.sh: installing $package..." >&2
apt-get install -y -q --no-install-recommends "$package" >/dev/null || note "apt-get install $package failed"
"$python" -c "import ensurepip, venv" >/dev/null 2>&1 || note "$python still has no ensurepip after installing"
echo "install_python_venv.sh: $package installed" >&2
