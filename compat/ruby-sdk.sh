#!/usr/bin/env bash
# The AWS SDK for Ruby (Debian's ruby-aws-sdk-s3): MinIO mint's Ruby suite's operations and what
# Ruby applications that keep media on S3 (Mastodon, Discourse) do, checked value by value
# (compat/ruby_sdk_suite.rb).
source "$(dirname "$0")/lib.sh"
command -v ruby >/dev/null && ruby -e 'require "aws-sdk-s3"' 2>/dev/null ||
  fail "ruby-aws-sdk-s3 not installed (scripts/install-deps.sh test)"
step "aws-sdk-s3 $(ruby -e 'require "aws-sdk-s3"; print Aws::S3::GEM_VERSION')"
ruby "$COMPAT_ROOT/compat/ruby_sdk_suite.rb"
