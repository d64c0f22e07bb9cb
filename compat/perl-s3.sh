#!/usr/bin/env bash
# Net::Amazon::S3 (Debian's libnet-amazon-s3-perl) with SigV2 and SigV4: its bucket and client
# APIs, compat/suites/perl_s3.pl.
source "$(dirname "$0")/lib.sh"
perl -MNet::Amazon::S3 -e1 2>/dev/null || fail "Net::Amazon::S3 missing: scripts/install-deps.sh test installs libnet-amazon-s3-perl"
perl "$COMPAT_ROOT/compat/suites/perl_s3.pl" "${ENDPOINT#http://}" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" "$WORK"
