"""Loaded by every Python process of compat/s3fs-suite.sh (this directory is on PYTHONPATH), the
processes s3fs's tests spawn included: s3fs's own test suite against gateways in place of moto.

The suite starts moto's server on the ports it names (5555, and 5556 for its fsspec-derived
tests) and resets moto's state before each test with a POST to `/moto-api/reset`. The script has
started a gateway on each port; here moto's threaded server becomes a stand-in whose start
empties that gateway (a new moto server starts empty), and the reset POST empties it too: every
object version, delete marker and upload aborted, every bucket policy and bucket removed. Nothing
in the suite's files changes."""

import sys
import types


def empty_gateway(endpoint):
    """Removes everything from the gateway at `endpoint`, as a reset moto holds nothing."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    for bucket in s3.list_buckets().get("Buckets", []):
        name = bucket["Name"]
        s3.delete_bucket_policy(Bucket=name)
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=name):
            gone = [
                {"Key": v["Key"], "VersionId": v["VersionId"]}
                for v in page.get("Versions", []) + page.get("DeleteMarkers", [])
            ]
            for i in range(0, len(gone), 1000):
                s3.delete_objects(Bucket=name, Delete={"Objects": gone[i : i + 1000], "Quiet": True})
        for page in s3.get_paginator("list_multipart_uploads").paginate(Bucket=name):
            for upload in page.get("Uploads", []):
                s3.abort_multipart_upload(Bucket=name, Key=upload["Key"], UploadId=upload["UploadId"])
        s3.delete_bucket(Bucket=name)


class ThreadedMotoServer:
    """moto's server as the suite drives it (start, stop), standing for a gateway already up."""

    def __init__(self, ip_address="127.0.0.1", port=5000, **_):
        self.endpoint = f"http://{ip_address}:{port}"

    def start(self):
        empty_gateway(self.endpoint)

    def stop(self):
        pass


standin = types.ModuleType("moto.moto_server.threaded_moto_server")
standin.ThreadedMotoServer = ThreadedMotoServer
sys.modules["moto.moto_server.threaded_moto_server"] = standin


def _patch_requests():
    import requests

    post = requests.post

    def reset_or_post(url, *args, **kwargs):
        if str(url).rstrip("/").endswith("/moto-api/reset"):
            empty_gateway(str(url).split("/moto-api")[0])
            answer = requests.models.Response()
            answer.status_code = 200
            return answer
        return post(url, *args, **kwargs)

    requests.post = reset_or_post


try:
    _patch_requests()
except ImportError:  # a process of this venv without requests: nothing to patch
    pass
