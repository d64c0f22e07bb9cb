// AWS SDK for JavaScript v3 (@aws-sdk/client-s3, lib-storage, s3-request-presigner) with its
// default settings, which since 2025 add a CRC32 to every upload (aws-chunked with a trailer for
// streams) and validate checksums on GET. Every step checks what came back; any mismatch fails.
// Run by compat/js-sdk.sh against a fresh gateway (ENDPOINT, AWS_* in the environment).
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { Readable } from "node:stream";
import * as S from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";

const s3 = new S.S3Client({ endpoint: process.env.ENDPOINT, region: "us-east-1", forcePathStyle: true });
const send = (cmd) => s3.send(cmd);
const md5 = (b) => `"${crypto.createHash("md5").update(b).digest("hex")}"`;
const crc32 = (b) => {
  let c = ~0;
  for (const x of b) {
    c ^= x;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  const out = Buffer.alloc(4);
  out.writeUInt32BE(~c >>> 0);
  return out.toString("base64");
};
const bytesOf = async (r) => Buffer.from(await r.Body.transformToByteArray());
const refused = async (p, name, status) => {
  const e = await p.then(() => null, (e) => e);
  assert.ok(e, `expected ${name}, the request succeeded`);
  assert.equal(e.name, name);
  assert.equal(e.$metadata.httpStatusCode, status);
  assert.ok(e.$metadata.requestId, "error without a request id");
};

let step = 0;
const t = async (name, f) => {
  step++;
  await f();
  console.log(`  - ${name}`);
};

const B = `js-sdk-${process.pid}`;
const small = crypto.randomBytes(1000);

await t("CreateBucket, HeadBucket, GetBucketLocation, ListBuckets", async () => {
  await send(new S.CreateBucketCommand({ Bucket: B }));
  assert.equal((await send(new S.HeadBucketCommand({ Bucket: B }))).$metadata.httpStatusCode, 200);
  const loc = await send(new S.GetBucketLocationCommand({ Bucket: B }));
  assert.ok(!loc.LocationConstraint, "us-east-1 has no location constraint");
  assert.ok((await send(new S.ListBucketsCommand({}))).Buckets.some((b) => b.Name === B));
  await refused(send(new S.HeadBucketCommand({ Bucket: `${B}-none` })), "NotFound", 404);
});

await t("PutObject: buffer, string, stream (aws-chunked + trailer), SHA256, CRC64NVME, empty", async () => {
  const r = await send(new S.PutObjectCommand({
    Bucket: B, Key: "a.bin", Body: small, ContentType: "application/x-test", Metadata: { foo: "bar" },
  }));
  assert.equal(r.ETag, md5(small));
  assert.equal(r.ChecksumCRC32, crc32(small));
  assert.equal((await send(new S.PutObjectCommand({ Bucket: B, Key: "dir/s.txt", Body: "hello world" }))).ETag,
    md5(Buffer.from("hello world")));
  const parts = [crypto.randomBytes(70000), crypto.randomBytes(5)];
  const whole = Buffer.concat(parts);
  const st = await send(new S.PutObjectCommand({ Bucket: B, Key: "stream.bin", Body: Readable.from(parts), ContentLength: whole.length }));
  assert.equal(st.ETag, md5(whole));
  assert.equal(st.ChecksumCRC32, crc32(whole));
  assert.ok(whole.equals(await bytesOf(await send(new S.GetObjectCommand({ Bucket: B, Key: "stream.bin" })))));
  const sha = await send(new S.PutObjectCommand({ Bucket: B, Key: "sha.bin", Body: small, ChecksumAlgorithm: "SHA256" }));
  assert.equal(sha.ChecksumSHA256, crypto.createHash("sha256").update(small).digest("base64"));
  const c64 = await send(new S.PutObjectCommand({ Bucket: B, Key: "crc64.bin", Body: small, ChecksumAlgorithm: "CRC64NVME" }));
  assert.ok(c64.ChecksumCRC64NVME, "CRC64NVME not returned");
  assert.equal((await send(new S.PutObjectCommand({ Bucket: B, Key: "empty", Body: "" }))).ETag, md5(Buffer.alloc(0)));
  // A checksum that does not match the body stores nothing.
  await refused(send(new S.PutObjectCommand({
    Bucket: B, Key: "bad.bin", Body: small, ChecksumSHA256: crypto.createHash("sha256").update("other").digest("base64"),
  })), "BadDigest", 400);
  await refused(send(new S.HeadObjectCommand({ Bucket: B, Key: "bad.bin" })), "NotFound", 404);
});

await t("GetObject (checksum validation on), Range, HeadObject, missing keys", async () => {
  const g = await send(new S.GetObjectCommand({ Bucket: B, Key: "a.bin", ChecksumMode: "ENABLED" }));
  assert.ok(small.equals(await bytesOf(g)));
  assert.equal(g.ContentType, "application/x-test");
  assert.deepEqual(g.Metadata, { foo: "bar" });
  assert.equal(g.ChecksumCRC32, crc32(small));
  const r = await send(new S.GetObjectCommand({ Bucket: B, Key: "a.bin", Range: "bytes=10-19" }));
  assert.equal(r.ContentRange, "bytes 10-19/1000");
  assert.ok(small.subarray(10, 20).equals(await bytesOf(r)));
  const h = await send(new S.HeadObjectCommand({ Bucket: B, Key: "a.bin", ChecksumMode: "ENABLED" }));
  assert.equal(h.ContentLength, 1000);
  assert.equal(h.ETag, md5(small));
  assert.equal(h.ChecksumCRC32, crc32(small));
  await refused(send(new S.HeadObjectCommand({ Bucket: B, Key: "nope" })), "NotFound", 404);
  await refused(send(new S.GetObjectCommand({ Bucket: B, Key: "nope" })), "NoSuchKey", 404);
  const nm = await send(new S.GetObjectCommand({ Bucket: B, Key: "a.bin", IfNoneMatch: md5(small) })).then(() => null, (e) => e);
  assert.equal(nm?.$metadata.httpStatusCode, 304);
});

await t("ListObjectsV2 (pages, delimiter), ListObjects", async () => {
  const all = await send(new S.ListObjectsV2Command({ Bucket: B }));
  assert.deepEqual(all.Contents.map((c) => c.Key), ["a.bin", "crc64.bin", "dir/s.txt", "empty", "sha.bin", "stream.bin"]);
  assert.equal(all.Contents.find((c) => c.Key === "sha.bin").ChecksumAlgorithm[0], "SHA256");
  const keys = [];
  let token;
  do {
    const p = await send(new S.ListObjectsV2Command({ Bucket: B, Delimiter: "/", MaxKeys: 2, ContinuationToken: token }));
    keys.push(...(p.Contents ?? []).map((c) => c.Key), ...(p.CommonPrefixes ?? []).map((c) => c.Prefix));
    token = p.NextContinuationToken;
  } while (token);
  assert.deepEqual(keys.sort(), ["a.bin", "crc64.bin", "dir/", "empty", "sha.bin", "stream.bin"]);
  const v1 = await send(new S.ListObjectsCommand({ Bucket: B, Prefix: "dir/" }));
  assert.deepEqual(v1.Contents.map((c) => c.Key), ["dir/s.txt"]);
});

await t("CopyObject (COPY and REPLACE), tagging, GetObjectAttributes", async () => {
  const c = await send(new S.CopyObjectCommand({ Bucket: B, Key: "copy.bin", CopySource: `${B}/a.bin` }));
  assert.equal(c.CopyObjectResult.ETag, md5(small));
  assert.deepEqual((await send(new S.HeadObjectCommand({ Bucket: B, Key: "copy.bin" }))).Metadata, { foo: "bar" });
  await send(new S.CopyObjectCommand({
    Bucket: B, Key: "copy2.bin", CopySource: `${B}/a.bin`, MetadataDirective: "REPLACE", Metadata: { x: "y" }, ContentType: "text/plain",
  }));
  const h = await send(new S.HeadObjectCommand({ Bucket: B, Key: "copy2.bin" }));
  assert.deepEqual([h.ContentType, h.Metadata], ["text/plain", { x: "y" }]);
  await send(new S.PutObjectTaggingCommand({ Bucket: B, Key: "a.bin", Tagging: { TagSet: [{ Key: "k", Value: "v" }] } }));
  assert.deepEqual((await send(new S.GetObjectTaggingCommand({ Bucket: B, Key: "a.bin" }))).TagSet, [{ Key: "k", Value: "v" }]);
  const a = await send(new S.GetObjectAttributesCommand({ Bucket: B, Key: "a.bin", ObjectAttributes: ["ETag", "Checksum", "ObjectSize"] }));
  assert.equal(a.ObjectSize, 1000);
  assert.equal(a.Checksum.ChecksumCRC32, crc32(small));
});

await t("lib-storage Upload: 12 MiB buffer in 3 parts, a stream of unknown length", async () => {
  const big = crypto.randomBytes(12 << 20);
  const r = await new Upload({ client: s3, params: { Bucket: B, Key: "big.bin", Body: big }, partSize: 5 << 20, queueSize: 3 }).done();
  assert.match(r.ETag, /^"[0-9a-f]{32}-3"$/);
  assert.ok(big.equals(await bytesOf(await send(new S.GetObjectCommand({ Bucket: B, Key: "big.bin", ChecksumMode: "ENABLED" })))));
  const chunks = [crypto.randomBytes(6 << 20), crypto.randomBytes(3 << 20)];
  const s = await new Upload({ client: s3, params: { Bucket: B, Key: "big2.bin", Body: Readable.from(chunks) }, partSize: 5 << 20 }).done();
  assert.match(s.ETag, /-2"$/);
  assert.ok(Buffer.concat(chunks).equals(await bytesOf(await send(new S.GetObjectCommand({ Bucket: B, Key: "big2.bin" })))));
});

await t("multipart by hand: SHA256 parts, UploadPartCopy, ListParts, ListMultipartUploads, Abort", async () => {
  const part1 = crypto.randomBytes(5 << 20);
  const c = await send(new S.CreateMultipartUploadCommand({ Bucket: B, Key: "mp.bin", ChecksumAlgorithm: "SHA256" }));
  const p1 = await send(new S.UploadPartCommand({ Bucket: B, Key: "mp.bin", UploadId: c.UploadId, PartNumber: 1, Body: part1, ChecksumAlgorithm: "SHA256" }));
  const p2 = await send(new S.UploadPartCopyCommand({ Bucket: B, Key: "mp.bin", UploadId: c.UploadId, PartNumber: 2, CopySource: `${B}/a.bin` }));
  assert.equal((await send(new S.ListPartsCommand({ Bucket: B, Key: "mp.bin", UploadId: c.UploadId }))).Parts.length, 2);
  assert.ok((await send(new S.ListMultipartUploadsCommand({ Bucket: B }))).Uploads.some((u) => u.UploadId === c.UploadId));
  const done = await send(new S.CompleteMultipartUploadCommand({
    Bucket: B, Key: "mp.bin", UploadId: c.UploadId, MultipartUpload: { Parts: [
      { PartNumber: 1, ETag: p1.ETag, ChecksumSHA256: p1.ChecksumSHA256 },
      { PartNumber: 2, ETag: p2.CopyPartResult.ETag, ChecksumSHA256: p2.CopyPartResult.ChecksumSHA256 },
    ] },
  }));
  assert.match(done.ETag, /-2"$/);
  assert.match(done.ChecksumSHA256, /-2$/);
  assert.ok(Buffer.concat([part1, small]).equals(await bytesOf(await send(new S.GetObjectCommand({ Bucket: B, Key: "mp.bin" })))));
  const ab = await send(new S.CreateMultipartUploadCommand({ Bucket: B, Key: "ab.bin" }));
  await send(new S.AbortMultipartUploadCommand({ Bucket: B, Key: "ab.bin", UploadId: ab.UploadId }));
  await refused(send(new S.ListPartsCommand({ Bucket: B, Key: "ab.bin", UploadId: ab.UploadId })), "NoSuchUpload", 404);
});

await t("presigned GET and PUT (fetch)", async () => {
  const get = await getSignedUrl(s3, new S.GetObjectCommand({ Bucket: B, Key: "a.bin" }), { expiresIn: 60 });
  const r = await fetch(get);
  assert.equal(r.status, 200);
  assert.ok(small.equals(Buffer.from(await r.arrayBuffer())));
  const put = await getSignedUrl(s3, new S.PutObjectCommand({ Bucket: B, Key: "pp.bin" }), { expiresIn: 60 });
  assert.equal((await fetch(put, { method: "PUT", body: "presigned body" })).status, 200);
  assert.equal((await bytesOf(await send(new S.GetObjectCommand({ Bucket: B, Key: "pp.bin" })))).toString(), "presigned body");
  const tampered = get.replace("a.bin", "copy.bin");
  assert.equal((await fetch(tampered)).status, 403);
});

await t("bucket settings: CORS, lifecycle, tagging, policy", async () => {
  await send(new S.PutBucketCorsCommand({ Bucket: B, CORSConfiguration: { CORSRules: [{ AllowedMethods: ["GET"], AllowedOrigins: ["*"] }] } }));
  assert.deepEqual((await send(new S.GetBucketCorsCommand({ Bucket: B }))).CORSRules[0].AllowedMethods, ["GET"]);
  await send(new S.PutBucketLifecycleConfigurationCommand({ Bucket: B, LifecycleConfiguration: { Rules: [
    { ID: "tmp", Status: "Enabled", Filter: { Prefix: "tmp/" }, Expiration: { Days: 1 } }] } }));
  assert.equal((await send(new S.GetBucketLifecycleConfigurationCommand({ Bucket: B }))).Rules[0].ID, "tmp");
  await send(new S.PutBucketTaggingCommand({ Bucket: B, Tagging: { TagSet: [{ Key: "a", Value: "b" }] } }));
  assert.deepEqual((await send(new S.GetBucketTaggingCommand({ Bucket: B }))).TagSet, [{ Key: "a", Value: "b" }]);
  const policy = { Version: "2012-10-17", Statement: [{ Effect: "Allow", Principal: "*", Action: "s3:GetObject", Resource: `arn:aws:s3:::${B}/dir/*` }] };
  await send(new S.PutBucketPolicyCommand({ Bucket: B, Policy: JSON.stringify(policy) }));
  assert.equal(JSON.parse((await send(new S.GetBucketPolicyCommand({ Bucket: B }))).Policy).Statement[0].Action, "s3:GetObject");
  const anon = await fetch(`${process.env.ENDPOINT}/${B}/dir/s.txt`);
  assert.deepEqual([anon.status, await anon.text()], [200, "hello world"]);
  assert.equal((await fetch(`${process.env.ENDPOINT}/${B}/a.bin`)).status, 403);
});

await t("versioning: two versions, list, get by id, DeleteObjects of every version, DeleteBucket", async () => {
  await send(new S.PutBucketVersioningCommand({ Bucket: B, VersioningConfiguration: { Status: "Enabled" } }));
  assert.equal((await send(new S.GetBucketVersioningCommand({ Bucket: B }))).Status, "Enabled");
  const one = await send(new S.PutObjectCommand({ Bucket: B, Key: "v.txt", Body: "one" }));
  await send(new S.PutObjectCommand({ Bucket: B, Key: "v.txt", Body: "two" }));
  assert.equal((await bytesOf(await send(new S.GetObjectCommand({ Bucket: B, Key: "v.txt", VersionId: one.VersionId })))).toString(), "one");
  const l = await send(new S.ListObjectVersionsCommand({ Bucket: B, Prefix: "v.txt" }));
  assert.equal(l.Versions.length, 2);
  const every = await send(new S.ListObjectVersionsCommand({ Bucket: B }));
  const objs = [...(every.Versions ?? []), ...(every.DeleteMarkers ?? [])].map((v) => ({ Key: v.Key, VersionId: v.VersionId }));
  const d = await send(new S.DeleteObjectsCommand({ Bucket: B, Delete: { Objects: objs } }));
  assert.equal(d.Errors?.length ?? 0, 0, JSON.stringify(d.Errors));
  assert.equal(d.Deleted.length, objs.length);
  await send(new S.DeleteBucketCommand({ Bucket: B }));
  await refused(send(new S.HeadBucketCommand({ Bucket: B })), "NotFound", 404);
});

const sdk = (await import("@aws-sdk/client-s3/package.json", { with: { type: "json" } })).default.version;
console.log(`AWS SDK for JavaScript ${sdk} on Node.js ${process.version}: ${step} steps passed`);
