#!/usr/bin/env bash
# The AWS SDK for Go v1 (Debian's golang-github-aws-aws-sdk-go-dev) driven the way Go tools built
# on it use S3: compat/suites/aws_sdk_go_v1/main.go (s3manager uploads and downloads in parallel
# parts, waiters, Content-MD5, ranges, paginated listings, copies, presigned URLs, batch delete).
source "$(dirname "$0")/lib.sh"
[ -d /usr/share/gocode/src/github.com/aws/aws-sdk-go/service/s3 ] ||
  fail "aws-sdk-go missing: scripts/install-deps.sh test installs golang-github-aws-aws-sdk-go-dev"
mkdir -p "$WORK/suite"
cp "$COMPAT_ROOT/compat/suites/aws_sdk_go_v1/main.go" "$WORK/suite/"
(cd "$WORK/suite" && GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= GOCACHE="$WORK/gocache" \
  go build -o suite .) || fail "building the aws-sdk-go v1 scenario failed"
"$WORK/suite/suite" "$ENDPOINT" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY"
