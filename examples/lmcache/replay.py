"""Replays an LMCache-shaped KV-cache offload workload against Penstock and prints throughput.

It uses the awscrt S3 client the way LMCache's S3 connector drives it: virtual-hosted requests (Host = <bucket>.<endpoint>), keys of the form
model@world_size@worker_id@chunkhash@dtype flattened and percent-encoded into the path, a burst of
whole-object PUTs, then HEADs (existence and size), then whole-object GETs, all in flight at once.
Every byte read back is verified; a HEAD of a missing key must be a clean 404.

Usage: awscrt_lmcache.py HOST:PORT BUCKET [--tls CA_FILE] [--chunks N] [--chunk-mib M] [--inflight K]
Prints one JSON line with throughputs.
"""
import argparse
import json
import os
import random
import sys
import threading
import time
from urllib.parse import quote

from awscrt import auth, io, s3
from awscrt.http import HttpHeaders, HttpRequest
from awscrt.io import ClientTlsContext, TlsConnectionOptions, TlsContextOptions


def payload(i, size):
    block = random.Random(i).randbytes(1 << 20)
    return (block * (size // len(block) + 1))[:size]


class Body:
    """A read-only stream over a bytes object, as LMCache's MemoryViewStream."""

    def __init__(self, data):
        self.mv = memoryview(data)
        self.pos = 0

    def read(self, size=-1):
        if size is None or size < 0:
            size = len(self.mv) - self.pos
        out = self.mv[self.pos:self.pos + size]
        self.pos += len(out)
        return bytes(out)

    def readinto(self, buf):
        n = min(len(buf), len(self.mv) - self.pos)
        buf[:n] = self.mv[self.pos:self.pos + n]
        self.pos += n
        return n

    def seek(self, offset, whence=0):
        self.pos = offset if whence == 0 else (self.pos + offset if whence == 1 else len(self.mv) + offset)
        return self.pos

    def tell(self):
        return self.pos


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("endpoint")
    ap.add_argument("bucket")
    ap.add_argument("--tls", metavar="CA_FILE")
    ap.add_argument("--chunks", type=int, default=64)
    ap.add_argument("--chunk-mib", type=int, default=32)
    ap.add_argument("--inflight", type=int, default=64)
    ap.add_argument("--distinct", type=int, default=8, help="distinct payloads (memory bound)")
    a = ap.parse_args()
    size = a.chunk_mib << 20
    host = f"{a.bucket}.{a.endpoint}"
    region = os.environ.get("AWS_DEFAULT_REGION", "us-east-1")

    elg = io.EventLoopGroup(min(a.inflight, 16))
    bootstrap = io.ClientBootstrap(elg, io.DefaultHostResolver(elg))
    creds = auth.AwsCredentialsProvider.new_static(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"])
    tls_opts = None
    if a.tls:
        ctx_opts = TlsContextOptions()
        ctx_opts.override_default_trust_store_from_path(ca_filepath=a.tls)
        tls_opts = TlsConnectionOptions(ClientTlsContext(ctx_opts))
        tls_opts.set_alpn_list(["h2", "http/1.1"])
    client = s3.S3Client(
        bootstrap=bootstrap,
        region=region,
        tls_connection_options=tls_opts,
        tls_mode=s3.S3RequestTlsMode.ENABLED if a.tls else s3.S3RequestTlsMode.DISABLED,
    )

    payloads = [payload(i, size) for i in range(min(a.distinct, a.chunks))]
    keys = [f"llama-3-8b@1@0@{random.Random(i).getrandbits(64):016x}@bfloat16" for i in range(a.chunks)]
    path = lambda k: "/" + quote(k.replace("/", "_"))
    gate = threading.Semaphore(a.inflight)
    errors = []

    def run(kind, i, key):
        gate.acquire()
        h = HttpHeaders()
        h.add("Host", host)
        body = None
        if kind == "PUT":
            data = payloads[i % len(payloads)]
            h.add("Content-Length", str(len(data)))
            h.add("Content-Type", "application/octet-stream")
            body = Body(data)
            rtype = s3.S3RequestType.PUT_OBJECT
        elif kind == "GET":
            rtype = s3.S3RequestType.GET_OBJECT
        else:
            rtype = s3.S3RequestType.DEFAULT
        state = {"status": None, "len": None, "got": 0, "bad": False}
        expected = payloads[i % len(payloads)] if i is not None else None

        def on_headers(status_code, headers, **kw):
            state["status"] = status_code
            for n, v in headers:
                if n.lower() == "content-length":
                    state["len"] = int(v)

        def on_body(chunk, offset, **kw):
            if expected is None or bytes(chunk) != expected[offset:offset + len(chunk)]:
                state["bad"] = True
            state["got"] += len(chunk)

        def on_done(error=None, status_code=None, **kw):
            state["error"] = error
            if status_code is not None:
                state["status"] = status_code
            gate.release()

        req = s3.S3Request(
            client=client,
            type=rtype,
            operation_name="HeadObject" if kind == "HEAD" else None,
            request=HttpRequest(kind, path(key), h, body_stream=body),
            credential_provider=creds,
            region=region,
            on_headers=on_headers,
            on_body=on_body if kind == "GET" else None,
            on_done=on_done,
        )
        return req, state

    def burst(kind, indices):
        t = time.time()
        reqs = [run(kind, i, keys[i]) for i in indices]
        for r, _ in reqs:
            r.finished_future.exception()
        secs = time.time() - t
        for (_, st), i in zip(reqs, indices):
            ok = st["status"] == 200 and not st.get("error")
            if kind == "GET":
                ok = ok and st["got"] == size and not st["bad"]
            if kind == "HEAD":
                ok = ok and st["len"] == size
            if not ok:
                errors.append(f"{kind} {keys[i]}: {st}")
        return secs

    n = range(a.chunks)
    put_s = burst("PUT", n)
    head_s = burst("HEAD", n)
    get_s = burst("GET", n)

    # A missing key: HEAD answers 404 (and the client reports it as such, not as a hang).
    r, st = run("HEAD", None, "llama-3-8b@1@0@ffffffffffffffff@bfloat16")
    r.finished_future.exception()
    if st["status"] != 404:
        errors.append(f"HEAD of a missing key: {st}")

    total = a.chunks * size / (1 << 20)
    print(json.dumps({
        "tls": bool(a.tls), "chunks": a.chunks, "chunk_mib": a.chunk_mib, "inflight": a.inflight,
        "put_mib_s": round(total / put_s, 1), "head_ops_s": round(a.chunks / head_s, 1),
        "get_mib_s": round(total / get_s, 1), "errors": len(errors),
    }))
    if errors:
        print("\n".join(errors[:10]), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
