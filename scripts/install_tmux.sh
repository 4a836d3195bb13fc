#!/bin/sh
# Installs Debian's tmux for the tests of `acpio prompt` in a real terminal
# (tests/oneshot/test_terminal_ui.py), when it is missing and we can.
#
# Idempotent: does nothing when tmux is present. Never fails the build: when it cannot install
# (not root, no apt-get, no network), it prints a note and exits 0, and those tests skip with
# their reason.
set -u

command -v tmux >/dev/null 2>&1 && exit 0
note() { echo "install_tmux.sh: $*; the terminal tests of acpio prompt will be skipped." >&2; exit 0; }
command -v apt-get >/dev/null 2>&1 || note "tmux is missing and apt-get is not available (not Debian/Ubuntu?)"
[ "$(id -u)" = 0 ] || note "tmux is missing; run as root (or: sudo apt-get install tmux)"

export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when apt does not know the package yet.
if ! apt-cache show tmux >/dev/null 2>&1; then
    apt-get update -q >/dev/null || note "apt-get update failed"
fi
echo "install_tmux.sh: installing tmux..." >&2
apt-get install -y -q --no-install-recommends tmux >/dev/null || note "apt-get install tmux failed"
command -v tmux >/dev/null 2>&1 || note "tmux is still missing after installing"
echo "install_tmux.sh: $(tmux -V)" >&2
