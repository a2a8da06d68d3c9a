# shellcheck shell=sh
# directories.sh ROOT DIR...: make DIRs (under ROOT) where ROOT and the directories above it
# keep to the safe path rule (safe_path), so that what root then writes in them stays there.
set -eu
safe_path "$1/."
mkdir -p -- "$@"
