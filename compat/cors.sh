#!/usr/bin/env bash
# CORS in a real browser: headless Chromium (Debian's chromium + chromium-driver, driven by
# selenium) loads a page from another origin that uploads with a presigned PUT and reads back
# with fetch(); one origin allowed by the bucket's CORS rules, one refused.
source "$(dirname "$0")/lib.sh"
python3 -c 'import boto3, selenium' 2>/dev/null || fail "boto3 and selenium needed (scripts/install-deps.sh test)"
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] || fail "chromium and chromium-driver needed (scripts/install-deps.sh test)"
python3 "$COMPAT_ROOT/compat/cors_browser.py"
