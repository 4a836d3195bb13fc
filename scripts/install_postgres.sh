#!/bin/sh
# Installs Debian's PostgreSQL server for the PostgreSQL session store's tests (tests/store/), when it
# is missing and we can. The tests start a throwaway cluster in a temporary directory on a local
# socket (as the postgres user when run as root: initdb refuses root) and stop it afterwards.
#
# Idempotent: does nothing when initdb is found. Never fails the build: when it cannot install (not
# root, no apt-get, no network), it prints a note and exits 0, and those tests skip with the reason.
# The Python side (psycopg) comes from the venv (the postgres extra), not from here.
set -u

have_initdb() {
    command -v initdb >/dev/null 2>&1 && return 0
    for bin in /usr/lib/postgresql/*/bin/initdb; do
        [ -x "$bin" ] && return 0
    done
    return 1
}

have_initdb && exit 0
note() { echo "install_postgres.sh: $*; the PostgreSQL store tests will be skipped." >&2; exit 0; }
command -v apt-get >/dev/null 2>&1 || note "PostgreSQL is missing and apt-get is not available (not Debian/Ubuntu?)"
[ "$(id -u)" = 0 ] || note "PostgreSQL is missing; run as root (or: sudo apt-get install postgresql)"

export DEBIAN_FRONTEND=noninteractive
if ! apt-cache show postgresql >/dev/null 2>&1; then
    apt-get update -q >/dev/null || note "apt-get update failed"
fi
echo "install_postgres.sh: installing postgresql..." >&2
apt-get install -y -q --no-install-recommends postgresql >/dev/null \
    || note "apt-get install postgresql failed"
have_initdb || note "initdb is still missing after installing postgresql"
echo "install_postgres.sh: PostgreSQL installed" >&2
