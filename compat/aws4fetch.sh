#!/usr/bin/env bash
# aws4fetch (npm, pinned), the SigV4 signer over fetch of Workers, edge functions and browser
# code: keys with reserved characters sent as the URL parser leaves them (a `+` signed as S3
# reads it, a space), ranges, tags, copies, listings, multipart, presigned GET and PUT, a wrong
# secret refused (compat/aws4fetch_suite.mjs).
source "$(dirname "$0")/lib.sh"
node_suite aws4fetch_suite.mjs module aws4fetch@1.0.20
