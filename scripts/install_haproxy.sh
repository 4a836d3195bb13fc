#!/bin/sh
# Installs Debian's HAProxy for the tests of acpio serve behind a load balancer
# (tests/remote/test_balancer.py) and the deployment example (examples/deploy/), when it is missing
# and we can. The tests start HAProxy themselves, with a generated configuration, on loopback ports.
#
# Idempotent: does nothing when haproxy is found. Never fails the build: when it cannot install
# (not root, no apt-get, no network), it prints a note and exits 0, and those tests skip with the
# reason.
set -u

have_haproxy() { command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; }

have_haproxy && exit 0
note() { echo "install_haproxy.sh: $*; the load balancer tests will be skipped." >&2; exit 0; }
command -v apt-get >/dev/null 2>&1 || note "HAProxy is missing and apt-get is not available (not Debian/Ubuntu?)"
[ "$(id -u)" = 0 ] || note "HAProxy is missing; run as root (or: sudo apt-get install haproxy)"

export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when apt does not know the package yet.
if ! apt-cache show haproxy >/dev/null 2>&1; then
    apt-get update -q >/dev/null || note "apt-get update failed"
fi
echo "install_haproxy.sh: installing haproxy..." >&2
apt-get install -y -q --no-install-recommends haproxy >/dev/null || note "apt-get install haproxy failed"
have_haproxy || note "haproxy is still missing after installing"
echo "install_haproxy.sh: $(/usr/sbin/haproxy -v | head -n 1)" >&2
