#!/usr/bin/env bash
# Builds RocksDB's C++ library once per machine and prints the environment that makes every later
# cargo invocation link it instead of recompiling it.
#
# Why: the rocksdb crate's bundled build costs 15-20 minutes on two cores, and `cargo clippy` after
# `cargo build` (or a second target dir) triggers it again because build-script fingerprints differ.
# librocksdb-sys honours ROCKSDB_LIB_DIR + ROCKSDB_STATIC, so we compile the exact sources that the
# locked librocksdb-sys version bundles, once, into a cache outside any clone. A plain `cargo build`
# without this environment still builds the bundled library and needs nothing extra.
#
# Usage: eval "$(scripts/rocksdb-prebuilt.sh)"
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache_root=${PENSTOCK_CACHE:-$HOME/.cache/penstock}
ver=$(cd "$root" && cargo metadata --format-version 1 --locked 2>/dev/null |
  python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="librocksdb-sys"))')
[ -n "$ver" ] || { echo "cannot read the locked librocksdb-sys version: does 'cargo metadata --locked' fail (Cargo.lock out of date)?" >&2; exit 1; }
dir="$cache_root/librocksdb-sys-$ver"
if [ ! -f "$dir/librocksdb.a" ]; then
  echo "building RocksDB $ver once into $dir (15-20 minutes on 2 cores)" >&2
  mkdir -p "$dir"
  (cd "$root" && env -u ROCKSDB_LIB_DIR -u ROCKSDB_STATIC CARGO_TARGET_DIR="$dir/build" \
    cargo build --release --locked -p librocksdb-sys >&2)
  lib=$(find "$dir/build/release/build" -name librocksdb.a | head -n 1)
  [ -n "$lib" ] || { echo "librocksdb.a not found after build" >&2; exit 1; }
  cp "$lib" "$dir/librocksdb.a.tmp" && mv "$dir/librocksdb.a.tmp" "$dir/librocksdb.a"
  rm -rf "$dir/build"
fi
echo "export ROCKSDB_LIB_DIR='$dir' ROCKSDB_STATIC=1"
