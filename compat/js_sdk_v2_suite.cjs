// The AWS SDK for JavaScript v2 (npm `aws-sdk`, pinned last release): out of support since
// 2025, still in a great many Node.js applications. It has its own SigV4 signer, XML parser and
// managed uploader, and reads a few answers from their raw text (GetBucketLocation). Every step
// checks what came back; any mismatch fails. Run by compat/js-sdk-v2.sh (ENDPOINT, AWS_* set).
const assert = require("node:assert/strict");
const crypto = require("node:crypto");
const { PassThrough } = require("node:stream");
const AWS = require("aws-sdk");
require("aws-sdk/lib/maintenance_mode_message").suppress = true;

const s3 = new AWS.S3({ endpoint: process.env.ENDPOINT, s3ForcePathStyle: true, signatureVersion: "v4", region: "us-east-1" });
const md5 = (b) => `"${crypto.createHash("md5").update(b).digest("hex")}"`;
const refused = async (p, code, status) => {
  const e = await p.then(() => null, (e) => e);
  assert.ok(e, `expected ${code}, the request succeeded`);
  assert.equal(e.code, code);
  assert.equal(e.statusCode, status);
};
const t = async (name, f) => {
  await f();
  console.log(`  - ${name}`);
};

(async () => {
  const B = `js-sdk-v2-${process.pid}`;
  const small = crypto.randomBytes(1000);
  const big = crypto.randomBytes(40 * 1024 * 1024);

  await t("createBucket, headBucket, getBucketLocation", async () => {
    assert.equal((await s3.createBucket({ Bucket: B }).promise()).Location, `/${B}`);
    await s3.headBucket({ Bucket: B }).promise();
    // The SDK reads this one from the raw text: '' is us-east-1.
    assert.equal((await s3.getBucketLocation({ Bucket: B }).promise()).LocationConstraint, "");
  });

  await t("putObject with metadata and tags, ranged getObject, headObject", async () => {
    const put = await s3.putObject({ Bucket: B, Key: "a/s", Body: small, ContentType: "text/x", Metadata: { k: "v" }, Tagging: "t=1" }).promise();
    assert.equal(put.ETag, md5(small));
    const part = await s3.getObject({ Bucket: B, Key: "a/s", Range: "bytes=10-19" }).promise();
    assert.equal(part.ContentRange, "bytes 10-19/1000");
    assert.ok(part.Body.equals(small.subarray(10, 20)));
    const head = await s3.headObject({ Bucket: B, Key: "a/s" }).promise();
    assert.deepEqual([head.ContentLength, head.ContentType, head.Metadata], [1000, "text/x", { k: "v" }]);
    assert.deepEqual((await s3.getObjectTagging({ Bucket: B, Key: "a/s" }).promise()).TagSet, [{ Key: "t", Value: "1" }]);
    await refused(s3.headObject({ Bucket: B, Key: "absent" }).promise(), "NotFound", 404);
    await refused(s3.getObject({ Bucket: B, Key: "absent" }).promise(), "NoSuchKey", 404);
  });

  await t("managed upload of a 40 MiB stream in parts, read whole and streamed", async () => {
    const body = new PassThrough();
    body.end(big);
    const up = await s3.upload({ Bucket: B, Key: "big", Body: body }, { partSize: 5 * 1024 * 1024, queueSize: 4 }).promise();
    assert.equal(up.Location, `${process.env.ENDPOINT}/${B}/big`);
    assert.match(up.ETag, /^"[0-9a-f]{32}-8"$/);
    assert.ok((await s3.getObject({ Bucket: B, Key: "big" }).promise()).Body.equals(big));
    const streamed = await new Promise((resolve, reject) => {
      const chunks = [];
      s3.getObject({ Bucket: B, Key: "big" })
        .createReadStream()
        .on("data", (d) => chunks.push(d))
        .on("end", () => resolve(Buffer.concat(chunks)))
        .on("error", reject);
    });
    assert.ok(streamed.equals(big));
  });

  await t("copyObject replacing metadata, uploadPartCopy with a range", async () => {
    const copy = await s3.copyObject({ Bucket: B, Key: "copy", CopySource: `${B}/a/s`, MetadataDirective: "REPLACE", ContentType: "text/y" }).promise();
    assert.equal(copy.CopyObjectResult.ETag, md5(small));
    assert.equal((await s3.headObject({ Bucket: B, Key: "copy" }).promise()).ContentType, "text/y");
    const u = await s3.createMultipartUpload({ Bucket: B, Key: "pc" }).promise();
    const p1 = await s3.uploadPartCopy({ Bucket: B, Key: "pc", UploadId: u.UploadId, PartNumber: 1, CopySource: `${B}/big`, CopySourceRange: "bytes=0-5242879" }).promise();
    const p2 = await s3.uploadPartCopy({ Bucket: B, Key: "pc", UploadId: u.UploadId, PartNumber: 2, CopySource: `${B}/a/s` }).promise();
    const parts = [p1, p2].map((p, i) => ({ PartNumber: i + 1, ETag: p.CopyPartResult.ETag }));
    const done = await s3.completeMultipartUpload({ Bucket: B, Key: "pc", UploadId: u.UploadId, MultipartUpload: { Parts: parts } }).promise();
    assert.equal(done.Location, `${process.env.ENDPOINT}/${B}/pc`);
    const got = (await s3.getObject({ Bucket: B, Key: "pc" }).promise()).Body;
    assert.ok(got.equals(Buffer.concat([big.subarray(0, 5242880), small])));
  });

  await t("listObjects, listObjectsV2 pages", async () => {
    const v1 = await s3.listObjects({ Bucket: B, Delimiter: "/" }).promise();
    assert.deepEqual(v1.Contents.map((c) => c.Key), ["big", "copy", "pc"]);
    assert.deepEqual(v1.CommonPrefixes.map((p) => p.Prefix), ["a/"]);
    const page = await s3.listObjectsV2({ Bucket: B, MaxKeys: 2 }).promise();
    assert.deepEqual([page.KeyCount, page.IsTruncated], [2, true]);
    const rest = await s3.listObjectsV2({ Bucket: B, ContinuationToken: page.NextContinuationToken }).promise();
    assert.deepEqual(rest.Contents.map((c) => c.Key), ["copy", "pc"]);
  });

  await t("presigned GET, presigned POST", async () => {
    const get = await fetch(s3.getSignedUrl("getObject", { Bucket: B, Key: "a/s", Expires: 60 }));
    assert.equal(get.status, 200);
    assert.ok(Buffer.from(await get.arrayBuffer()).equals(small));
    const post = s3.createPresignedPost({ Bucket: B, Fields: { key: "posted" }, Conditions: [["content-length-range", 0, 10000]] });
    const form = new FormData();
    for (const [k, v] of Object.entries(post.fields)) form.append(k, v);
    form.append("file", new Blob([small]));
    assert.equal((await fetch(post.url, { method: "POST", body: form })).status, 204);
    assert.ok((await s3.getObject({ Bucket: B, Key: "posted" }).promise()).Body.equals(small));
  });

  await t("versioning, deleteObjects of every version, deleteBucket", async () => {
    await s3.putBucketVersioning({ Bucket: B, VersioningConfiguration: { Status: "Enabled" } }).promise();
    assert.equal((await s3.getBucketVersioning({ Bucket: B }).promise()).Status, "Enabled");
    const one = await s3.putObject({ Bucket: B, Key: "v", Body: "one" }).promise();
    await s3.putObject({ Bucket: B, Key: "v", Body: "two" }).promise();
    const old = await s3.getObject({ Bucket: B, Key: "v", VersionId: one.VersionId }).promise();
    assert.equal(old.Body.toString(), "one");
    const v = await s3.listObjectVersions({ Bucket: B }).promise();
    const all = v.Versions.concat(v.DeleteMarkers || []).map((x) => ({ Key: x.Key, VersionId: x.VersionId }));
    assert.equal(all.length, 7);
    const r = await s3.deleteObjects({ Bucket: B, Delete: { Objects: all } }).promise();
    assert.deepEqual([r.Deleted.length, r.Errors.length], [7, 0]);
    await s3.deleteBucket({ Bucket: B }).promise();
    await refused(s3.headBucket({ Bucket: B }).promise(), "NotFound", 404);
  });

  console.log("PASS: AWS SDK for JavaScript v2");
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
