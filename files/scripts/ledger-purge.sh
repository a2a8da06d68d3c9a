# shellcheck shell=sh
# ledger-purge.sh LEDGER PACKAGE...: purge PACKAGEs, names from LEDGER that are still
# installed, and what they pulled in, keeping what the admin's own packages need
# (ledger_purge in lib.sh).
set -eu
ledger_purge "$@"
