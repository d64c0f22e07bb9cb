// MinIO's JavaScript SDK (npm `minio`, pinned release): the operations a Node.js application
// makes through it, each checked value by value; any mismatch fails. minio-js signs requests
// itself, splits streams of unknown length into parts on its own, and reads every answer with
// its own XML parser (an answer it cannot read is a failure, and a multipart upload it failed to
// read back is aborted). Run by compat/minio-js.sh against a fresh gateway (ENDPOINT, AWS_* set).
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import * as Minio from "minio";

const url = new URL(process.env.ENDPOINT);
const c = new Minio.Client({
  endPoint: url.hostname,
  port: Number(url.port),
  useSSL: false,
  accessKey: process.env.AWS_ACCESS_KEY_ID,
  secretKey: process.env.AWS_SECRET_ACCESS_KEY,
  region: "us-east-1",
});
const md5 = (b) => crypto.createHash("md5").update(b).digest("hex");
const bytesOf = async (stream) => {
  const chunks = [];
  for await (const x of stream) chunks.push(x);
  return Buffer.concat(chunks);
};
const all = async (stream) => {
  const out = [];
  for await (const x of stream) out.push(x);
  return out;
};
const refused = async (p, code) => {
  const e = await p.then(() => null, (e) => e);
  assert.ok(e, `expected ${code}, the request succeeded`);
  assert.equal(e.code, code);
};
const t = async (name, f) => {
  await f();
  console.log(`  - ${name}`);
};

const B = `minio-js-${process.pid}`;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "minio-js-"));
const small = crypto.randomBytes(1000);
const big = crypto.randomBytes(70 * 1024 * 1024);

await t("makeBucket, bucketExists, listBuckets", async () => {
  await c.makeBucket(B, "us-east-1");
  assert.equal(await c.bucketExists(B), true);
  assert.equal(await c.bucketExists(`${B}-absent`), false);
  assert.ok((await c.listBuckets()).some((b) => b.name === B));
});

await t("putObject with metadata, statObject, getObject, getPartialObject", async () => {
  const r = await c.putObject(B, "a/small", small, small.length, { "Content-Type": "text/x-a", "X-Amz-Meta-K": "v" });
  assert.equal(r.etag, md5(small));
  const s = await c.statObject(B, "a/small");
  assert.equal(s.size, small.length);
  assert.equal(s.metaData["content-type"], "text/x-a");
  assert.equal(s.metaData.k, "v");
  assert.ok((await bytesOf(await c.getObject(B, "a/small"))).equals(small));
  assert.ok((await bytesOf(await c.getPartialObject(B, "a/small", 10, 20))).equals(small.subarray(10, 30)));
  await refused(c.statObject(B, "absent"), "NotFound");
  await refused(c.getObject(B, "absent"), "NoSuchKey");
});

await t("putObject of a 70 MiB stream of unknown length (multipart)", async () => {
  const r = await c.putObject(B, "big", Readable.from([big.subarray(0, 30e6), big.subarray(30e6)]));
  assert.match(r.etag, /^[0-9a-f]{32}-\d+$/);
  assert.ok((await bytesOf(await c.getObject(B, "big"))).equals(big));
  assert.deepEqual(await all(c.listIncompleteUploads(B, "", true)), []);
});

await t("fPutObject, fGetObject", async () => {
  const f = path.join(dir, "f.bin");
  fs.writeFileSync(f, big.subarray(0, 7e6));
  await c.fPutObject(B, "f.bin", f, { "Content-Type": "application/x-f" });
  await c.fGetObject(B, "f.bin", path.join(dir, "g.bin"));
  assert.ok(fs.readFileSync(path.join(dir, "g.bin")).equals(big.subarray(0, 7e6)));
});

await t("copyObject with conditions, composeObject (UploadPartCopy)", async () => {
  const cond = new Minio.CopyConditions();
  cond.setMatchETag(md5(small));
  await c.copyObject(B, "copied", `/${B}/a/small`, cond);
  assert.ok((await bytesOf(await c.getObject(B, "copied"))).equals(small));
  const wrong = new Minio.CopyConditions();
  wrong.setMatchETag("0".repeat(32));
  await refused(c.copyObject(B, "copied2", `/${B}/a/small`, wrong), "PreconditionFailed");
  const dst = new Minio.CopyDestinationOptions({ Bucket: B, Object: "composed" });
  const srcs = [
    new Minio.CopySourceOptions({ Bucket: B, Object: "big" }),
    new Minio.CopySourceOptions({ Bucket: B, Object: "f.bin" }),
  ];
  await c.composeObject(dst, srcs);
  const got = await bytesOf(await c.getObject(B, "composed"));
  assert.ok(got.equals(Buffer.concat([big, big.subarray(0, 7e6)])));
  assert.deepEqual(await all(c.listIncompleteUploads(B, "", true)), []);
});

await t("listObjects, listObjectsV2 (delimiter, recursive)", async () => {
  const flat = (await all(c.listObjectsV2(B, "", true))).map((o) => o.name);
  assert.deepEqual(flat, ["a/small", "big", "composed", "copied", "f.bin"]);
  const top = (await all(c.listObjects(B, "", false))).map((o) => o.name || o.prefix);
  assert.deepEqual(top.sort(), ["a/", "big", "composed", "copied", "f.bin"]);
});

await t("presigned GET, PUT and POST policy", async () => {
  const get = await fetch(await c.presignedGetObject(B, "a/small", 60));
  assert.equal(get.status, 200);
  assert.ok(Buffer.from(await get.arrayBuffer()).equals(small));
  const put = await fetch(await c.presignedPutObject(B, "pput", 60), { method: "PUT", body: small });
  assert.equal(put.status, 200);
  assert.ok((await bytesOf(await c.getObject(B, "pput"))).equals(small));
  const p = c.newPostPolicy();
  p.setBucket(B);
  p.setKey("posted");
  p.setExpires(new Date(Date.now() + 60_000));
  p.setContentLengthRange(1, 10_000);
  p.setContentType("text/plain");
  const { postURL, formData } = await c.presignedPostPolicy(p);
  const form = new FormData();
  for (const [k, v] of Object.entries(formData)) form.append(k, v);
  form.append("file", new Blob([small]));
  assert.equal((await fetch(postURL, { method: "POST", body: form })).status, 204);
  assert.equal((await c.statObject(B, "posted")).metaData["content-type"], "text/plain");
});

await t("object and bucket tagging", async () => {
  await c.setObjectTagging(B, "a/small", { t: "1", u: "2" });
  const tags = await c.getObjectTagging(B, "a/small");
  assert.deepEqual(tags.map((x) => [x.Key, String(x.Value)]), [["t", "1"], ["u", "2"]]);
  await c.removeObjectTagging(B, "a/small");
  assert.deepEqual(await c.getObjectTagging(B, "a/small"), []);
  await c.setBucketTagging(B, { team: "ml" });
  assert.deepEqual((await c.getBucketTagging(B)).map((x) => [x.Key, x.Value]), [["team", "ml"]]);
  await c.removeBucketTagging(B);
});

await t("bucket policy: anonymous reads under a prefix", async () => {
  const policy = {
    Version: "2012-10-17",
    Statement: [{ Effect: "Allow", Principal: { AWS: ["*"] }, Action: ["s3:GetObject"], Resource: [`arn:aws:s3:::${B}/a/*`] }],
  };
  await c.setBucketPolicy(B, JSON.stringify(policy));
  assert.equal(JSON.parse(await c.getBucketPolicy(B)).Statement[0].Effect, "Allow");
  assert.equal((await fetch(`${process.env.ENDPOINT}/${B}/a/small`)).status, 200);
  assert.equal((await fetch(`${process.env.ENDPOINT}/${B}/big`)).status, 403);
  await c.setBucketPolicy(B, "");
  assert.equal((await fetch(`${process.env.ENDPOINT}/${B}/a/small`)).status, 403);
});

await t("lifecycle", async () => {
  await c.setBucketLifecycle(B, { Rule: [{ ID: "tmp", Status: "Enabled", Filter: { Prefix: "tmp/" }, Expiration: { Days: 1 } }] });
  const lc = await c.getBucketLifecycle(B);
  assert.equal(lc.Rule.ID, "tmp");
  assert.equal(lc.Rule.Expiration.Days, 1);
  await c.removeBucketLifecycle(B);
});

await t("versioning: versions listed and removed by id", async () => {
  await c.setBucketVersioning(B, { Status: "Enabled" });
  assert.deepEqual(await c.getBucketVersioning(B), { Status: "Enabled" });
  const one = await c.putObject(B, "v", "one");
  const two = await c.putObject(B, "v", "two");
  assert.notEqual(one.versionId, two.versionId);
  const old = await bytesOf(await c.getObject(B, "v", { versionId: one.versionId }));
  assert.equal(old.toString(), "one");
  const versions = (await all(c.listObjects(B, "v", true, { IncludeVersion: true }))).map((o) => o.versionId);
  assert.deepEqual(versions.sort(), [one.versionId, two.versionId].sort());
});

await t("removeObjects (every version), removeBucket", async () => {
  const everything = (await all(c.listObjects(B, "", true, { IncludeVersion: true }))).map((o) => ({
    name: o.name,
    versionId: o.versionId,
  }));
  const errors = await c.removeObjects(B, everything);
  assert.deepEqual(errors, []);
  assert.deepEqual(await all(c.listObjects(B, "", true, { IncludeVersion: true })), []);
  await c.removeBucket(B);
  assert.equal(await c.bucketExists(B), false);
});

const L = `${B}-lock`;
await t("object lock: default retention, legal hold", async () => {
  await c.makeBucket(L, "us-east-1", { ObjectLocking: true });
  await c.setObjectLockConfig(L, { mode: "GOVERNANCE", unit: "Days", validity: 1 });
  assert.deepEqual(await c.getObjectLockConfig(L), { objectLockEnabled: "Enabled", mode: "GOVERNANCE", unit: "Days", validity: 1 });
  const put = await c.putObject(L, "locked", "data");
  const r = await c.getObjectRetention(L, "locked", { versionId: put.versionId });
  assert.equal(r.mode, "GOVERNANCE");
  assert.ok(new Date(r.retainUntilDate) > new Date());
  await c.setObjectLegalHold(L, "locked", { status: "ON", versionId: put.versionId });
  assert.deepEqual(await c.getObjectLegalHold(L, "locked", { versionId: put.versionId }), { Status: "ON" });
  await refused(c.removeObject(L, "locked", { versionId: put.versionId }), "AccessDenied");
  await c.setObjectLegalHold(L, "locked", { status: "OFF", versionId: put.versionId });
  await c.removeObject(L, "locked", { versionId: put.versionId, governanceBypass: true });
  await c.removeBucket(L);
});

fs.rmSync(dir, { recursive: true, force: true });
console.log("PASS: minio-js");
