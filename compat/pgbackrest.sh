#!/usr/bin/env bash
# pgBackRest 2.45 (Debian), PostgreSQL's backup tool, with its repository in a bucket: its S3
# client is its own, in C, over TLS. A PostgreSQL 15 cluster archives its WAL through
# archive-push; a full, a differential and an incremental backup are taken (files over the
# upload chunk size go up in parts, small files bundled), `info` and `verify` read the repository
# back, a restore into a new data directory replays the archive through archive-get and must
# hold exactly the rows written, and expire removes the oldest backup's objects.
export COMPAT_TLS=1
source "$(dirname "$0")/lib.sh"
command -v pgbackrest >/dev/null || fail "pgbackrest not installed (apt-get install pgbackrest)"
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$pgbin/initdb" ] || fail "PostgreSQL missing: apt-get install postgresql"

B=pgbackrest-$RANDOM
aws --endpoint-url "$ENDPOINT" --ca-bundle "$CA_FILE" s3 mb "s3://$B" >/dev/null

# PostgreSQL and pgBackRest refuse to run as root: both run as the package's postgres user
# (or as whoever runs this, when that is not root).
chmod 755 "$WORK"
P=$WORK/pg && mkdir -p "$P/sock" "$P/log" "$P/lock" "$P/spool"
as=()
if [ "$(id -u)" = 0 ]; then
  chown -R postgres "$P"
  as=(runuser -u postgres --)
fi
PGPORT=$(free_port)
CONF=$P/pgbackrest.conf
cat >"$CONF" <<EOF
[global]
repo1-type=s3
repo1-path=/repo
repo1-s3-bucket=$B
repo1-s3-endpoint=localhost
repo1-storage-port=${ENDPOINT##*:}
repo1-s3-region=$AWS_DEFAULT_REGION
repo1-s3-key=$AWS_ACCESS_KEY_ID
repo1-s3-key-secret=$AWS_SECRET_ACCESS_KEY
repo1-s3-uri-style=path
repo1-storage-ca-file=$CA_FILE
repo1-retention-full=2
repo1-bundle=y
repo1-bundle-size=2MiB
start-fast=y
process-max=2
compress-type=lz4
log-path=$P/log
lock-path=$P/lock
spool-path=$P/spool
log-level-console=warn
log-level-file=detail

[demo]
pg1-path=$P/data
pg1-port=$PGPORT
pg1-socket-path=$P/sock
pg1-user=postgres
EOF
chmod 644 "$CONF"
bk() { "${as[@]}" pgbackrest --config="$CONF" --stanza=demo "$@"; }

"${as[@]}" "$pgbin/initdb" -D "$P/data" -U postgres -A trust -E UTF8 >"$P/initdb.log" 2>&1 ||
  { cat "$P/initdb.log" >&2; fail "initdb failed"; }
cat >>"$P/data/postgresql.conf" <<EOF
port = $PGPORT
listen_addresses = ''
unix_socket_directories = '$P/sock'
wal_level = replica
archive_mode = on
archive_command = 'pgbackrest --config=$CONF --stanza=demo archive-push %p'
max_wal_senders = 3
EOF
pgstart() { "${as[@]}" "$pgbin/pg_ctl" -D "$1" -l "$P/log/postgres.log" -w -t 60 start >/dev/null || { tail -n 30 "$P/log/postgres.log" >&2; fail "PostgreSQL did not start"; }; }
pgstop() { "${as[@]}" "$pgbin/pg_ctl" -D "$1" -m fast -w stop >/dev/null 2>&1 || true; }
psql_() { "${as[@]}" "$pgbin/psql" -h "$P/sock" -p "$PGPORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAtc "$1"; }
pgstart "$P/data"
CLEANUP_HOOKS+=("pgstop '$P/data'; pgstop '$P/restored'; [ \$rc -ne 0 ] && tail -n 40 '$P'/log/*.log >&2")

step "stanza-create and check (a WAL segment archived through archive-push)"
bk stanza-create || fail "stanza-create failed"
bk check || fail "check failed"

# ~60 MB of table files that compress little (hex of hashes): the backup sends files larger
# than pgBackRest's 5 MiB upload chunk, which go up as multipart uploads.
psql_ "create table t (id int primary key, v text); insert into t select g, encode(sha512(g::text::bytea), 'hex') || encode(sha512((-g)::text::bytea), 'hex') from generate_series(1, 200000) g;"
step "full backup"
bk backup --type=full || fail "full backup failed"
psql_ "insert into t select g, md5(g::text) from generate_series(200001, 230000) g; create table u as select g from generate_series(1, 1000) g;"
step "differential backup"
bk backup --type=diff || fail "diff backup failed"
psql_ "update t set v = 'changed' where id % 97 = 0; delete from t where id % 1013 = 0;"
step "incremental backup"
bk backup --type=incr || fail "incr backup failed"
# Rows written after the last backup: only archive-get's WAL replay can bring them back.
psql_ "insert into t select g, 'after the backup' from generate_series(230001, 231234) g;"
want=$(psql_ "select count(*), md5(string_agg(id::text || v, ',' order by id)) from t")
psql_ "select pg_switch_wal();" >/dev/null
bk check || fail "check after the backups failed"

grep -q 'operation="CompleteMultipartUpload"' "$WORK/gateway.log" || fail "no backup file went up in parts"
step "info lists the three backups"
info=$(bk info --output=json) || fail "info failed"
python3 - "$info" <<'PY' || fail "info does not show full, diff and incr backups"
import json, sys
backups = json.loads(sys.argv[1])[0]["backup"]
types = [b["type"] for b in backups]
assert types == ["full", "diff", "incr"], types
assert all(b["error"] is False for b in backups), backups
PY
step "verify reads every file of the repository back"
bk verify || fail "verify failed"
objects=$(aws --endpoint-url "$ENDPOINT" --ca-bundle "$CA_FILE" s3 ls --recursive "s3://$B/repo/" | wc -l)
[ "$objects" -gt 20 ] || fail "only $objects objects in the repository"

step "restore into a new data directory, WAL replayed from the archive"
pgstop "$P/data"
bk restore --pg1-path="$P/restored" --type=default || fail "restore failed"
sed -i "s/^archive_mode = on/archive_mode = off/" "$P/restored/postgresql.conf"
pgstart "$P/restored"
for _ in $(seq 60); do
  [ "$(psql_ 'select pg_is_in_recovery()')" = f ] && break
  sleep 1
done
got=$(psql_ "select count(*), md5(string_agg(id::text || v, ',' order by id)) from t")
[ "$got" = "$want" ] || fail "restored table differs: $got, expected $want"
[ "$(psql_ 'select count(*) from u')" = 1000 ] || fail "restored table u differs"
pgstop "$P/restored"

step "expire: a third full backup past retention-full=2 removes the first one's objects"
pgstart "$P/data"
first=$(bk info --output=json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["backup"][0]["label"])')
bk backup --type=full || fail "second full backup failed"
bk backup --type=full || fail "third full backup failed"
left=$(bk info --output=json | python3 -c 'import json,sys; print(" ".join(b["label"] for b in json.load(sys.stdin)[0]["backup"]))')
case " $left " in *" $first "*) fail "backup $first still listed after expire: $left" ;; esac
if aws --endpoint-url "$ENDPOINT" --ca-bundle "$CA_FILE" s3 ls --recursive "s3://$B/repo/backup/demo/$first/" | grep -q .; then
  fail "objects of expired backup $first are still in the bucket"
fi
bk verify || fail "verify after expire failed"
echo "pgbackrest scenario passed"
