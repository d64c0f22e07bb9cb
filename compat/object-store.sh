#!/usr/bin/env bash
# Apache Arrow's object_store 0.14.2 (the Rust S3 client of DataFusion, Polars, delta-rs,
# LanceDB, and of Python's obstore), checked by the integration suite the crate publishes for
# stores (compat/suites/object-store): puts, ranged and conditional gets, listings with
# delimiters, offsets and pages, copies and renames (copy-if-not-exists by a multipart upload
# completed with If-None-Match), multipart uploads (parts out of order, racing completions),
# attributes, conditional puts (If-None-Match and If-Match), presigned URLs, unsigned payloads
# and SHA-256 and CRC64NVME checksums.
source "$(dirname "$0")/lib.sh"
suite=$COMPAT_ROOT/compat/suites/object-store
step build
# A target directory of its own beside the gateway's: scenarios run two at a time, and a shared one
# would hold this build behind the other Rust suite's lock, inside this scenario's time limit.
target=${CARGO_TARGET_DIR:+${CARGO_TARGET_DIR%/}-object-store}
export CARGO_TARGET_DIR=${target:-$suite/target}
cargo build -q --release --locked --manifest-path "$suite/Cargo.toml" || fail "cannot build the object_store suite"
B=object-store-$RANDOM
aws --endpoint-url "$ENDPOINT" s3 mb "s3://$B" >/dev/null
step suite
AWS_ENDPOINT=$ENDPOINT AWS_ALLOW_HTTP=true AWS_BUCKET=$B \
  "$CARGO_TARGET_DIR/release/object-store-compat" || fail "object_store's integration suite failed"
echo "PASS: object_store"
