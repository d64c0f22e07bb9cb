// aws4fetch (npm, pinned by compat/aws4fetch.sh): the small SigV4 signer over fetch that Workers,
// edge functions and browser code use for S3. Its URLs are built with the WHATWG URL parser,
// which leaves `+` and many other reserved characters unencoded in the path, and it signs the
// path as S3 reads it (a `+` as a space). Every answer is checked value by value.
import { AwsClient } from 'aws4fetch';

const ep = process.env.ENDPOINT;
const bucket = `aws4fetch-${process.pid}`;
const aws = new AwsClient({
  accessKeyId: process.env.AWS_ACCESS_KEY_ID,
  secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY,
  service: 's3',
  region: process.env.AWS_DEFAULT_REGION || 'us-east-1',
});

function fail(why) {
  console.error(`FAIL: ${why}`);
  process.exit(1);
}
function step(name) {
  console.log(`  - ${name}`);
}
async function call(method, path, init = {}, want = 200) {
  const r = await aws.fetch(`${ep}${path}`, { method, ...init });
  const body = method === 'HEAD' ? '' : await r.text();
  if (r.status !== want) fail(`${method} ${path}: ${r.status}, expected ${want}: ${body.slice(0, 300)}`);
  return { r, body };
}
const unescape = (s) =>
  s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');
const keysOf = (xml) => [...xml.matchAll(/<Key>(.*?)<\/Key>/g)].map((m) => unescape(m[1]));

step('bucket created');
await call('PUT', `/${bucket}`);

step('objects whose keys hold reserved characters, sent as the URL parser leaves them');
// Each key as written in the URL, and the key S3 stores for it (a `+` reads as a space).
const keys = [
  ['plain.txt', 'plain.txt'],
  ['dir/sp ace.txt', 'dir/sp ace.txt'],
  ['dir/a+b.txt', 'dir/a b.txt'],
  ["odd!$&'()*,;=@:~.txt", "odd!$&'()*,;=@:~.txt"],
  ['uni/caf\u00e9 \u00fcber.txt', 'uni/caf\u00e9 \u00fcber.txt'],
  ['pct/100%25.txt', 'pct/100%.txt'],
];
for (const [written, stored] of keys) {
  await call('PUT', `/${bucket}/${written}`, { body: `body of ${stored}`, headers: { 'content-type': 'text/plain', 'x-amz-meta-k': 'v' } });
  const { body } = await call('GET', `/${bucket}/${written}`);
  if (body !== `body of ${stored}`) fail(`GET ${written}: ${body}`);
}
const { body: listing } = await call('GET', `/${bucket}?list-type=2`);
// S3 lists keys in the order of their UTF-8 bytes.
const want = keys.map(([, s]) => s).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
if (JSON.stringify(keysOf(listing)) !== JSON.stringify(want)) fail(`listing: ${keysOf(listing)} vs ${want}`);

step('HEAD, ranges, metadata, tagging, a copy');
const { r: head } = await call('HEAD', `/${bucket}/dir/a+b.txt`);
if (head.headers.get('x-amz-meta-k') !== 'v' || head.headers.get('content-length') !== String('body of dir/a b.txt'.length))
  fail(`HEAD: ${[...head.headers]}`);
const { body: part } = await call('GET', `/${bucket}/dir/a+b.txt`, { headers: { range: 'bytes=8-12' } }, 206);
if (part !== 'dir/a') fail(`range: ${part}`);
const tagging = '<Tagging><TagSet><Tag><Key>t</Key><Value>1</Value></Tag></TagSet></Tagging>';
await call('PUT', `/${bucket}/dir/a+b.txt?tagging`, { body: tagging });
const { body: tags } = await call('GET', `/${bucket}/dir/a+b.txt?tagging`);
if (!tags.includes('<Key>t</Key><Value>1</Value>')) fail(`tags: ${tags}`);
await call('PUT', `/${bucket}/copy+of.txt`, { headers: { 'x-amz-copy-source': `/${bucket}/dir/a%20b.txt` } });
const { body: copied } = await call('GET', `/${bucket}/copy of.txt`);
if (copied !== 'body of dir/a b.txt') fail(`copy: ${copied}`);

step('listing with a prefix and a delimiter, names given with + and %20');
for (const prefix of ['dir/a+b', 'dir/a%20b']) {
  const { body } = await call('GET', `/${bucket}?list-type=2&prefix=${prefix}`);
  if (JSON.stringify(keysOf(body)) !== JSON.stringify(['dir/a b.txt'])) fail(`prefix ${prefix}: ${keysOf(body)}`);
}
const { body: dirs } = await call('GET', `/${bucket}?list-type=2&delimiter=/`);
const prefixes = [...dirs.matchAll(/<Prefix>(.*?)<\/Prefix>/g)].map((m) => m[1]).filter(Boolean);
if (JSON.stringify(prefixes) !== JSON.stringify(['dir/', 'pct/', 'uni/'])) fail(`common prefixes: ${prefixes}`);

step('a multipart upload of two parts');
const { body: init } = await call('POST', `/${bucket}/big+file.bin?uploads`);
const id = encodeURIComponent(init.match(/<UploadId>(.*?)<\/UploadId>/)[1]);
const p1 = new Uint8Array(5 * 1024 * 1024).map((_, i) => i % 251);
const parts = [];
for (const [n, data] of [[1, p1], [2, new TextEncoder().encode('tail')]]) {
  const { r } = await call('PUT', `/${bucket}/big+file.bin?partNumber=${n}&uploadId=${id}`, { body: data });
  parts.push(`<Part><PartNumber>${n}</PartNumber><ETag>${r.headers.get('etag')}</ETag></Part>`);
}
await call('POST', `/${bucket}/big+file.bin?uploadId=${id}`, {
  body: `<CompleteMultipartUpload>${parts.join('')}</CompleteMultipartUpload>`,
});
const big = await aws.fetch(`${ep}/${bucket}/big%20file.bin`);
const got = new Uint8Array(await big.arrayBuffer());
if (got.length !== p1.length + 4 || got[300] !== 300 % 251 || new TextDecoder().decode(got.slice(-4)) !== 'tail')
  fail(`multipart object: ${got.length} bytes`);

step('presigned GET and PUT');
const signedGet = await aws.sign(`${ep}/${bucket}/dir/a+b.txt?X-Amz-Expires=300`, { aws: { signQuery: true } });
const g = await fetch(signedGet.url);
if (g.status !== 200 || (await g.text()) !== 'body of dir/a b.txt') fail(`presigned GET: ${g.status}`);
const signedPut = await aws.sign(`${ep}/${bucket}/up+loaded.txt?X-Amz-Expires=300`, { method: 'PUT', aws: { signQuery: true } });
const p = await fetch(signedPut.url, { method: 'PUT', body: 'presigned body' });
if (p.status !== 200) fail(`presigned PUT: ${p.status} ${await p.text()}`);
const { body: up } = await call('GET', `/${bucket}/up%20loaded.txt`);
if (up !== 'presigned body') fail(`presigned PUT stored: ${up}`);

step('a wrong secret is refused and writes nothing');
const wrong = new AwsClient({ accessKeyId: process.env.AWS_ACCESS_KEY_ID, secretAccessKey: 'not-the-secret', service: 's3', region: 'us-east-1' });
const refused = await wrong.fetch(`${ep}/${bucket}/x+y.txt`, { method: 'PUT', body: 'no' });
if (refused.status !== 403 || !(await refused.text()).includes('SignatureDoesNotMatch')) fail(`wrong secret: ${refused.status}`);
await call('HEAD', `/${bucket}/x%20y.txt`, {}, 404);

step('everything deleted, then the bucket');
const { body: all } = await call('GET', `/${bucket}?list-type=2`);
for (const k of keysOf(all)) {
  await call('DELETE', `/${bucket}/${k.split('/').map(encodeURIComponent).join('/')}`, {}, 204);
}
await call('DELETE', `/${bucket}`, {}, 204);
console.log('aws4fetch suite passed');
