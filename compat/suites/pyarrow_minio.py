"""pytest plugin for pyarrow's S3 tests against the gateway (compat/pyarrow.sh).

The suite's fixture starts `minio server` (here compat/suites/minio-stand-in/minio, which starts
the gateway) and polls MinIO's own health URL, `/minio/health/live`, until it answers 200. The
gateway has no such URL, so the poll is answered here by whether the server's port takes
connections; every other URL goes to urllib as before. Nothing in the suite's files changes."""

import socket
import urllib.parse
import urllib.request

_urlopen = urllib.request.urlopen


class _Live:
    """What the fixture reads of a health answer."""

    @staticmethod
    def getcode():
        return 200


def _health_or_urlopen(url, *args, **kwargs):
    full = url if isinstance(url, str) else url.full_url
    if full.endswith("/minio/health/live"):
        u = urllib.parse.urlsplit(full)
        socket.create_connection((u.hostname, u.port), timeout=1).close()  # raises until it listens
        return _Live()
    return _urlopen(url, *args, **kwargs)


urllib.request.urlopen = _health_or_urlopen
