# Shared by the benchmark scripts: parses --smoke / --rounds N / --only CASE, then builds Penstock and
# penstock-bench (debug for smoke runs, release otherwise) in the per-machine target dir.
# Sets root, mode, rounds, cache, PENSTOCK, BENCH (and compat/helpers.sh's functions: free_port);
# the caller's directory becomes the repo root.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
# shellcheck source=compat/helpers.sh
source "$root/compat/helpers.sh"  # free_port
mode=full
rounds=3
only=  # --only CASE: run just that case (run.sh, nfs.sh)
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) mode=smoke; rounds=1 ;;
    --rounds) rounds=$2; shift ;;
    --only) only=$2; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
cache=${PENSTOCK_CACHE:-$HOME/.cache/penstock}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$cache/target}
eval "$(scripts/rocksdb-prebuilt.sh)"
# A smoke run under scripts/test takes the debug build it made (PENSTOCK_BIN, penstock-bench beside
# it): building here with `-p` would unify other features, rebuild the gateway and replace the
# binary under the scenarios running meanwhile.
# prebuilt=1 tells the caller to take its other binaries from there too.
bindir= prebuilt=
if [ "$mode" = smoke ]; then
  profile=debug
  if [ -x "${PENSTOCK_BIN:-}" ] && [ -x "$(dirname "$PENSTOCK_BIN")/penstock-bench" ]; then
    bindir=$(dirname "$PENSTOCK_BIN") prebuilt=1
  else cargo build --locked -p penstock -p penstock-client >&2; fi
else profile=release; cargo build --release --locked -p penstock -p penstock-client >&2; fi
bindir=${bindir:-$CARGO_TARGET_DIR/$profile}
PENSTOCK="$bindir/penstock"
# PENSTOCK_BENCH_BIN: measure another build of the gateway (an A/B run against the one just built).
PENSTOCK=${PENSTOCK_BENCH_BIN:-$PENSTOCK}
BENCH="$bindir/penstock-bench"
