#!/usr/bin/env bash
# s3fs-fuse used as a file system, the way its own integration suite uses it: every operation
# s3fs turns into S3 calls that a simple cp/ls never makes. chmod, chown, touch and xattrs are
# CopyObject onto the same key with x-amz-metadata-directive: REPLACE; rename of a large file and
# writes into the middle of one are multipart uploads whose parts are UploadPartCopy ranges of the
# old object; mkdir writes a `dir/` marker with Content-Type application/x-directory; symlinks are
# objects whose x-amz-meta-mode says S_IFLNK; times live in x-amz-meta-mtime/ctime/atime.
#
# The battery runs once per mount-option set that changes what s3fs sends (the sets its own suite
# rotates through): SigV4 (default), SigV2, nocopyapi (rewrites instead of copies), nomultipart,
# singlepart_copy_limit=10 (multipart copies from 10 MiB), use_cache (a local cache directory).
# Every file operation runs under `timeout` so a misbehaving gateway fails the test, not hangs it.
source "$(dirname "$0")/lib.sh"
command -v s3fs >/dev/null || fail "s3fs not installed (apt-get install s3fs)"
[ -e /dev/fuse ] || fail "/dev/fuse missing"
[ -f /etc/mime.types ] || fail "/etc/mime.types missing (apt-get install media-types): s3fs guesses Content-Type from it"
B=s3fsfs-$RANDOM
aws_() { aws --endpoint-url "$ENDPOINT" "$@"; }
aws_ s3 mb "s3://$B" >/dev/null
echo "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" >"$WORK/passwd"; chmod 600 "$WORK/passwd"
MNT="$WORK/mnt"; mkdir -p "$MNT"
T="timeout 120"
BIG=$((25 * 1024 * 1024))
head -c "$BIG" /dev/urandom >"$WORK/big.src"

mount_s3fs() {
  # The options of s3fs's own harness (integration-test-common.sh) that Debian's s3fs 1.90 has, plus
  # the set under test.
  # shellcheck disable=SC2086
  s3fs "$B" "$MNT" -o url="$ENDPOINT" -o use_path_request_style -o endpoint=us-east-1 \
    -o passwd_file="$WORK/passwd" -o use_xattr=1 \
    -o stat_cache_expire=1 -o stat_cache_interval_expire=1 -o retries=3 \
    -o dbglevel=warn -o logfile="$WORK/s3fs.log" $1 || fail "s3fs did not start with: $1"
  for _ in $(seq 1 100); do mountpoint -q "$MNT" && return 0; sleep 0.1; done
  fail "s3fs did not mount with: $1"
}
unmount_s3fs() {
  for _ in $(seq 1 20); do timeout 20 fusermount -u "$MNT" 2>/dev/null && return 0; sleep 0.5; done
  umount -l "$MNT" 2>/dev/null || true
}
CLEANUP_HOOKS+=("mountpoint -q '$MNT' && { timeout 20 fusermount -u '$MNT' 2>/dev/null || umount -l '$MNT'; }")

size_of() { $T stat -c %s "$1"; }
times_of() { $T stat -c '%.9X %.9Z %.9Y' "$1"; } # atime ctime mtime
head_field() { aws_ s3api head-object --bucket "$B" --key "$1" --query "$2" --output text; }
xattr_set() { $T python3 -c 'import os,sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode())' "$@"; }
xattr_get() { $T python3 -c 'import os,sys; sys.stdout.write(os.getxattr(sys.argv[1], sys.argv[2]).decode())' "$@"; }
xattr_del() { $T python3 -c 'import os,sys; os.removexattr(sys.argv[1], sys.argv[2])' "$@"; }
# Writes LEN bytes of pattern at OFFSET into each named file in place, as `dd conv=notrunc` does.
write_at() {
  local off=$1 len=$2; shift 2
  $T python3 - "$off" "$len" "$@" <<'EOF' || fail "write_at $off $len"
import os, sys
off, n = int(sys.argv[1]), int(sys.argv[2])
data = bytes((i * 7 + 3) % 251 for i in range(n))
for path in sys.argv[3:]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    os.pwrite(fd, data, off)
    os.close(fd)
EOF
}
# A fresh object written by the aws cli at $1 (a key), with the times s3fs keeps in metadata.
external_with_times() {
  echo data | aws_ s3 cp --metadata "atime=1000000000,ctime=1000000000,mtime=1000000000" - "s3://$B/$1"
}

battery() {
  local run=$1 R="$MNT/$1" L="$WORK/local-$1"
  mkdir -p "$L"
  $T mkdir "$R" || fail "mkdir $run"

  step "empty file"
  $T touch "$R/empty"; [ "$(size_of "$R/empty")" = 0 ] || fail "empty file size"
  [ "$(head_field "$run/empty" ContentLength)" = 0 ] || fail "empty object not there"

  step "append"
  for _ in $(seq 50); do echo "a line of text"; done >"$R/append" || fail append
  [ "$(size_of "$R/append")" = $((50 * 15)) ] || fail "appended size"

  step "truncate"
  echo text >"$R/trunc"; : >"$R/trunc"; [ "$(size_of "$R/trunc")" = 0 ] || fail "truncate to 0"
  $T truncate -s 1024 "$R/trunc"; [ "$(size_of "$R/trunc")" = 1024 ] || fail "grow to 1024"
  cmp "$R/trunc" <(head -c 1024 /dev/zero) || fail "grown bytes are not zeros"
  $T truncate -s "$BIG" "$R/trunc-big" || fail "truncate up to 25 MiB"
  [ "$(size_of "$R/trunc-big")" = "$BIG" ] || fail "truncated-up size"
  $T cp "$WORK/big.src" "$R/shrink"; cp "$WORK/big.src" "$L/shrink"
  $T truncate -s $((20 * 1024 * 1024 + 64)) "$R/shrink"; truncate -s $((20 * 1024 * 1024 + 64)) "$L/shrink"
  $T cmp "$R/shrink" "$L/shrink" || fail "shrunk file differs"

  step "mv (content type from the new name)"
  echo "moving text" >"$R/from.txt"; $T mv "$R/from.txt" "$R/to.txt" || fail mv
  [ ! -e "$R/from.txt" ] || fail "old name still there"
  [ "$($T cat "$R/to.txt")" = "moving text" ] || fail "moved content"
  [ "$(head_field "$run/to.txt" ContentType)" = text/plain ] || fail "moved .txt is not text/plain"

  step "mv onto an existing large file"
  $T cp "$WORK/big.src" "$R/mv-a"; head -c $((BIG + 1)) /dev/urandom >"$R/mv-b" || fail "write mv-b"
  $T mv "$R/mv-a" "$R/mv-b" || fail "mv onto existing"
  $T cmp "$WORK/big.src" "$R/mv-b" || fail "mv onto existing: bytes"

  step "mv directories"
  $T mkdir "$R/d1"; $T mv "$R/d1" "$R/d1r" || fail "mv empty dir"
  [ -d "$R/d1r" ] && [ ! -e "$R/d1" ] || fail "empty dir not renamed"
  $T rmdir "$R/d1r" || fail "rmdir renamed"
  $T mkdir "$R/d2"; $T mkdir "$R/d2/sub"; echo in >"$R/d2/sub/f"; echo top >"$R/d2/f"
  $T mv "$R/d2" "$R/d2r" || fail "mv non-empty dir"
  [ "$($T cat "$R/d2r/sub/f")" = in ] && [ "$($T cat "$R/d2r/f")" = top ] || fail "moved tree content"
  [ -z "$(aws_ s3 ls "s3://$B/$run/d2/")" ] || fail "objects left under the old directory"
  $T rm -r "$R/d2r" || fail "rm -r moved tree"

  step "redirects"
  echo ABCDEF >"$R/redir"; [ "$($T cat "$R/redir")" = ABCDEF ] || fail "redirect 1"
  echo XYZ >"$R/redir"; echo 123456 >>"$R/redir"
  [ "$($T cat "$R/redir")" = "$(printf 'XYZ\n123456')" ] || fail "overwrite and append"

  step "chmod and chown"
  echo perms >"$R/perms"
  local before; before=$(stat -c %a "$R/perms")
  $T chmod 751 "$R/perms" || fail chmod
  [ "$(stat -c %a "$R/perms")" = 751 ] && [ "$before" != 751 ] || fail "mode not changed ($before)"
  [ "$(head_field "$run/perms" 'Metadata.mode')" = $((8#100751)) ] || fail "mode not in the object's metadata"
  $T chown 1000:1000 "$R/perms" || fail chown
  [ "$(stat -c %u:%g "$R/perms")" = 1000:1000 ] || fail "owner not changed"
  [ "$($T cat "$R/perms")" = perms ] || fail "content changed by chmod/chown"

  step "list and rmdir of a non-empty directory"
  $T mkdir "$R/lst"; $T touch "$R/lst/a"; $T mkdir "$R/lst/b"
  [ "$($T ls "$R/lst" | wc -l)" = 2 ] || fail "ls count"
  $T rmdir "$R/lst" 2>"$WORK/rmdir.err" && fail "rmdir of a non-empty directory succeeded"
  grep -q "Directory not empty" "$WORK/rmdir.err" || fail "rmdir: $(cat "$WORK/rmdir.err")"
  $T rm -rf "$R/lst" || fail "rm -rf"; [ ! -e "$R/lst" ] || fail "rm -rf left the directory"

  step "objects written by another client"
  echo data | aws_ s3 cp - "s3://$B/$run/extdir/file"
  $T ls "$R/extdir" | has file || fail "external directory not listed"
  [ "$($T cat "$R/extdir/file")" = data ] || fail "external file content"
  [ -d "$R/extdir" ] && [ "$(stat -c %a "$R/extdir")" = 750 ] || fail "implicit directory mode $(stat -c %a "$R/extdir")"
  echo old >"$R/extmod"; sleep 1.1
  echo "new new" | aws_ s3 cp - "s3://$B/$run/extmod"; sleep 1.1
  [ "$($T cat "$R/extmod")" = "new new" ] || fail "external modification not seen"
  [ ! -e "$R/extnew" ] || fail "extnew exists"
  echo data | aws_ s3 cp - "s3://$B/$run/extnew"; sleep 1.1
  [ -e "$R/extnew" ] || fail "external creation not seen"

  step "metadata updates of external objects (small and 25 MiB)"
  local src kind
  for kind in small large; do
    if [ $kind = small ]; then echo "small input" >"$L/ext.src"; else cp "$WORK/big.src" "$L/ext.src"; fi
    for op in chmod chown touch setx delx; do
      if [ $op = delx ]; then
        aws_ s3 cp "$L/ext.src" "s3://$B/$run/ext-$kind-$op" --only-show-errors \
          --metadata 'xattr=%7B%22key%22%3A%22dmFsdWU%3D%22%7D'
      else
        aws_ s3 cp "$L/ext.src" "s3://$B/$run/ext-$kind-$op" --only-show-errors
      fi
      src="$R/ext-$kind-$op"
      case $op in
        chmod) $T chmod +x "$src" ;;
        chown) $T chown "$(id -u)" "$src" ;;
        touch) $T touch "$src" ;;
        setx) xattr_set "$src" key value ;;
        delx) [ "$(xattr_get "$src" key)" = value ] || fail "xattr from x-amz-meta-xattr"; xattr_del "$src" key ;;
      esac || fail "$op on external $kind object"
      $T cmp "$src" "$L/ext.src" || fail "$op changed the bytes of the external $kind object"
    done
  done

  step "rename before close"
  (echo foo; mv "$R/rbc" "$R/rbc.new") >"$R/rbc" || fail "rename before close"
  [ "$($T cat "$R/rbc.new")" = foo ] || fail "rename before close: content"

  step "multipart upload, copy and mixed writes (25 MiB)"
  $T dd if="$WORK/big.src" of="$R/mp" bs=$BIG count=1 status=none || fail "dd 25 MiB"
  $T cmp "$WORK/big.src" "$R/mp" || fail "multipart upload bytes"
  $T mv "$R/mp" "$R/mp-copy" || fail "mv 25 MiB"
  $T cmp "$WORK/big.src" "$R/mp-copy" || fail "multipart copy bytes"
  [ "$(head_field "$run/mp-copy" ContentType)" = application/octet-stream ] || fail "copy content type"
  local off
  for off in $((15 * 1024 * 1024 / 2)) $((26 * 1024 * 1024)) 0 $((4 * 1024 * 1024)); do
    cp "$WORK/big.src" "$L/mix"; $T cp "$R/mp-copy" "$R/mix" || fail "cp for mix"
    write_at "$off" 16 "$R/mix" "$L/mix"
    $T cmp "$L/mix" "$R/mix" || fail "mixed write at $off"
  done
  $T cp -p "$WORK/big.src" "$R/mp-copy" || fail "cp -p over a large file (utimens during multipart)"
  $T cmp "$WORK/big.src" "$R/mp-copy" || fail "cp -p bytes"

  step "special names, hard links, symlinks"
  { ls "$R/special?" 2>&1 || true; } | has "No such file or directory" || fail "special? exists"
  $T mkdir "$R/TOYOTA TRUCK 8.2.2" || fail "mkdir with spaces"; $T rm -rf "$R/TOYOTA TRUCK 8.2.2"
  echo foo >"$R/hl"
  { ln "$R/hl" "$R/hl2" 2>&1 || true; } | has "Operation not supported" || fail "hard link not refused"
  ln -s hl "$R/sl" || fail "symlink"
  $T cmp "$R/hl" "$R/sl" || fail "read through symlink"
  [ "$(readlink "$R/sl")" = hl ] || fail "symlink target"
  rm -f "$R/hl"; [ -L "$R/sl" ] && [ ! -f "$R/sl" ] || fail "dangling symlink"

  step "extended attributes"
  $T touch "$R/xa"
  xattr_set "$R/xa" key1 value1; [ "$(xattr_get "$R/xa" key1)" = value1 ] || fail "xattr key1"
  xattr_set "$R/xa" key2 value2
  [ "$(xattr_get "$R/xa" key1)" = value1 ] && [ "$(xattr_get "$R/xa" key2)" = value2 ] || fail "xattr key1+key2"
  xattr_del "$R/xa" key1
  xattr_get "$R/xa" key1 2>/dev/null && fail "removed xattr still there"
  [ "$(xattr_get "$R/xa" key2)" = value2 ] || fail "xattr key2 after removing key1"

  step "times (mtime kept by cp -p, ctime moved by chmod/chown/xattr/mv)"
  echo t >"$R/tm"; $T cp -p "$R/tm" "$R/tm2" || fail "cp -p"
  local a b; a=($(times_of "$R/tm")); b=($(times_of "$R/tm2"))
  [ "${a[2]}" = "${b[2]}" ] && [ "${a[0]}" = "${b[0]}" ] || fail "cp -p times: ${a[*]} vs ${b[*]}"
  local op
  for op in chmod chown setx touch append mv; do
    external_with_times "$run/t-$op"
    a=($(times_of "$R/t-$op"))
    case $op in
      chmod) $T chmod +x "$R/t-$op" ;;
      chown) $T chown "$(id -u)" "$R/t-$op" ;;
      setx) xattr_set "$R/t-$op" key value ;;
      touch) $T touch "$R/t-$op" ;;
      append) echo foo >>"$R/t-$op" ;;
      mv) $T mv "$R/t-$op" "$R/t-$op-2" && mv "$R/t-$op-2" "$R/t-$op" ;;
    esac || fail "$op for times"
    b=($(times_of "$R/t-$op"))
    [ "${a[1]}" != "${b[1]}" ] || fail "$op did not change ctime (${a[*]} -> ${b[*]})"
    case $op in
      touch) [ "${a[2]}" != "${b[2]}" ] || fail "touch did not change mtime" ;;
      append) [ "${a[2]}" != "${b[2]}" ] && [ "${a[0]}" = "${b[0]}" ] || fail "append times ${a[*]} -> ${b[*]}" ;;
      *) [ "${a[2]}" = "${b[2]}" ] && [ "${a[0]}" = "${b[0]}" ] || fail "$op changed mtime/atime ${a[*]} -> ${b[*]}" ;;
    esac
  done
  aws_ s3api put-object --bucket "$B" --key "$run/tdir/" --content-type application/x-directory \
    --metadata "atime=1000000000,ctime=1000000000,mtime=1000000000" >/dev/null
  a=($(times_of "$R/tdir"))
  [ "${a[2]%%.*}" = 1000000000 ] || fail "directory marker's mtime metadata not read back (${a[*]})"
  $T chmod 0777 "$R/tdir" || fail "chmod dir"
  b=($(times_of "$R/tdir"))
  [ "${a[1]}" != "${b[1]}" ] && [ "${a[2]}" = "${b[2]}" ] || fail "dir chmod times ${a[*]} -> ${b[*]}"
  [ "$(stat -c %a "$R/tdir")" = 777 ] || fail "dir mode"
  [ "$(head_field "$run/tdir/" ContentType)" = application/x-directory ] || fail "marker content type after chmod"

  step "sed -i, copy, seeks and ranges"
  echo "sed in place test : BEFORE DATA" >"$R/sed"
  $T sed -i -e 's/BEFORE DATA/AFTER DATA/g' "$R/sed" || fail "sed -i"
  [ "$($T cat "$R/sed")" = "sed in place test : AFTER DATA" ] || fail "sed -i result"
  head -c 1024 /dev/urandom >"$L/simple"; $T cp "$L/simple" "$R/simple"; $T cmp "$L/simple" "$R/simple" || fail "cp"
  $T dd if=/dev/zero of="$R/seek" seek=1 count=1 bs=1024 status=none || fail "write after seek ahead"
  [ "$(size_of "$R/seek")" = 2048 ] || fail "seek-ahead size"
  seq 1000 >"$L/range"; $T cp "$L/range" "$R/range"
  $T dd if=/dev/zero of="$R/range" seek=1 count=1 bs=1024 conv=notrunc status=none
  dd if=/dev/zero of="$L/range" seek=1 count=1 bs=1024 conv=notrunc status=none
  $T cmp "$L/range" "$R/range" || fail "overwrite of a range"

  step "concurrent updates, reads, writes"
  local i j pids=()
  # A bare `wait` would also wait for the gateway, a child of this shell too.
  wait_all() {
    local p rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    pids=()
    return $rc
  }
  for i in 1 2 3 4 5; do echo foo >"$R/c$i"; done
  for j in $(seq 6); do
    (for i in 1 2 3 4 5; do
      # Racing opens, unlinks and creates of the same names may each fail; none may hang.
      f="$R/c$(( (RANDOM % 5) + 1 ))"
      $T cat "$f" >/dev/null 2>&1 || true; $T rm -f "$f" || true; $T sh -c 'echo foo >"$1"' _ "$f" || true
    done) &
    pids+=($!)
  done
  wait_all || true
  $T cp "$WORK/big.src" "$R/conc"
  for j in $(seq 8); do
    $T dd if="$R/conc" of=/dev/null skip=$((RANDOM % 1000)) count=16 bs=1024 status=none &
    pids+=($!)
  done
  wait_all || fail "concurrent reads"
  for j in $(seq 8); do
    $T dd if=/dev/zero of="$R/conc" seek=$((RANDOM % 1000)) count=16 bs=1024 conv=notrunc status=none &
    pids+=($!)
  done
  wait_all || fail "concurrent writes"
  [ "$(size_of "$R/conc")" = "$BIG" ] || fail "size after concurrent writes"
  (echo foo; wc -c <"$R/second" >"$L/second") >"$R/second"
  [ "$(cat "$L/second")" = 4 ] || fail "read through a second descriptor: $(cat "$L/second")"

  step "content types"
  $T touch "$R/ct.txt" "$R/ct.jpg" "$R/ct.bin"; $T mkdir "$R/ct.dir"
  [ "$(head_field "$run/ct.txt" ContentType)" = text/plain ] || fail "ct.txt"
  [ "$(head_field "$run/ct.jpg" ContentType)" = image/jpeg ] || fail "ct.jpg"
  [ "$(head_field "$run/ct.bin" ContentType)" = application/octet-stream ] || fail "ct.bin"
  [ "$(head_field "$run/ct.dir/" ContentType)" = application/x-directory ] || fail "ct.dir/"

  step "sparse files and writes far apart"
  rm -f "$L/sparse"; truncate -s "$BIG" "$L/sparse"
  write_at $((BIG / 2 - 128)) 16 "$L/sparse"
  $T cp "$L/sparse" "$R/sparse"; $T cmp "$L/sparse" "$R/sparse" || fail "sparse upload"
  rm -f "$L/skip"
  write_at $((12 * 1024 * 1024)) 65536 "$R/skip" "$L/skip"
  write_at $((35 * 1024 * 1024)) $((20 * 1024 * 1024)) "$R/skip" "$L/skip"
  write_at $((75 * 1024 * 1024)) 65536 "$R/skip" "$L/skip"
  $T cmp "$L/skip" "$R/skip" || fail "writes with holes (new file)"
  write_at $((13 * 1024 * 1024)) 65536 "$R/skip" "$L/skip"
  write_at $((74 * 1024 * 1024)) 65536 "$R/skip" "$L/skip"
  $T cmp "$L/skip" "$R/skip" || fail "writes with holes (existing file)"
  aws_ s3 cp "s3://$B/$run/skip" "$L/skip.s3" --only-show-errors
  cmp "$L/skip" "$L/skip.s3" || fail "writes with holes: the object differs from the file"

  step "rm -rf the run"
  $T rm -rf "$R" || fail "rm -rf $run"
  [ -z "$(aws_ s3 ls "s3://$B/$run/" --recursive)" ] || fail "objects left under $run"
  rm -rf "$L"
}

OPTION_SETS=(
  "-o sigv4"
  "-o sigv2"
  "-o nocopyapi"
  "-o nomultipart"
  "-o singlepart_copy_limit=10"
  "-o use_cache=$WORK/cache -o del_cache"
)
i=0
for opts in "${OPTION_SETS[@]}"; do
  i=$((i + 1))
  echo "s3fs $opts"
  mount_s3fs "$opts"
  battery "run$i"
  unmount_s3fs
done
echo "PASS: s3fs file system battery (${#OPTION_SETS[@]} option sets)"
