#!/usr/bin/env bash
# AWS SDK for JavaScript v2 (npm `aws-sdk`, pinned): the operations a Node.js application makes
# through it, checked value by value (compat/js_sdk_v2_suite.cjs).
source "$(dirname "$0")/lib.sh"
node_suite js_sdk_v2_suite.cjs commonjs aws-sdk@2.1693.0
