# Helpers every compat scenario uses, sourced by lib.sh and by scenarios that start their own
# servers (cluster.sh): no side effects.
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "  - $*"; }
# `producer | has PATTERN`: grep -q after reading all of stdin. A bare `| grep -q` exits at its
# first match, and a producer still writing (s3cmd prints line by line) then dies of a broken
# pipe, failing the pipeline under pipefail even though the line was there.
has() { local all; all=$(cat); grep -q -- "$1" <<<"$all"; }
# A TCP port free on the loopback now (the kernel's pick).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
