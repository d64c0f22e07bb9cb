# The AWS SDK for Ruby (aws-sdk-s3, Debian's package) against the gateway: the operations MinIO
# mint's Ruby suite exercises (buckets, upload_file, get to a file, copy_to, listings, exists?,
# presigned GET/PUT/POST) and what Ruby applications storing media on S3 do with it (Mastodon's
# and Discourse's uploads: public-read objects, multipart upload_file and upload_stream, ranged
# and multipart downloads, batch deletes, tagging, S3's error classes). Every check compares
# values, not just the absence of an exception; any failure exits non-zero.
require 'aws-sdk-s3'
require 'digest'
require 'net/http'
require 'securerandom'
require 'tmpdir'
require 'uri'

ENDPOINT = ENV.fetch('ENDPOINT')
CLIENT = Aws::S3::Client.new(endpoint: ENDPOINT, region: 'us-east-1', force_path_style: true,
                             access_key_id: ENV.fetch('AWS_ACCESS_KEY_ID'),
                             secret_access_key: ENV.fetch('AWS_SECRET_ACCESS_KEY'))
S3 = Aws::S3::Resource.new(client: CLIENT)
WORK = Dir.mktmpdir('ruby-sdk')
$failed = []

def check(name)
  yield
  puts "PASS #{name}"
rescue StandardError => e
  puts "FAIL #{name}: #{e.class}: #{e.message}"
  $failed << name
end

def expect(what, got, want)
  raise "#{what}: got #{got.inspect}, want #{want.inspect}" unless got == want
end

# An S3 call that must fail with error class `klass` (and HTTP status `status`).
def refused(what, klass, status)
  yield
  raise "#{what}: succeeded, want #{klass}"
rescue Aws::S3::Errors::ServiceError => e
  raise "#{what}: #{e.class} (#{e.context.http_response.status_code}), want #{klass} (#{status})" unless
    e.is_a?(klass) && e.context.http_response.status_code == status
end

def file_of(name, bytes)
  path = File.join(WORK, name)
  File.binwrite(path, Random.new(bytes).bytes(bytes))
  path
end

def md5_of_file(path)
  Digest::MD5.file(path).hexdigest
end

def http(method, url, body = nil, headers = {})
  uri = URI(url)
  Net::HTTP.start(uri.host, uri.port) do |h|
    req = Net::HTTP.const_get(method).new(uri, headers)
    req.body = body if body
    h.request(req)
  end
end

bucket = "ruby-sdk-#{SecureRandom.hex(4)}"
other = "#{bucket}-copies"

check 'buckets: create, exists?, list, missing bucket' do
  S3.create_bucket(bucket: bucket)
  S3.create_bucket(bucket: other)
  expect('exists?', S3.bucket(bucket).exists?, true)
  expect('missing exists?', S3.bucket("#{bucket}-missing").exists?, false)
  names = S3.buckets.map(&:name)
  raise "list_buckets lacks #{bucket}: #{names}" unless names.include?(bucket) && names.include?(other)
end

check 'put_object and head/get: body, content type, metadata, cache control' do
  CLIENT.put_object(bucket: bucket, key: 'media/a.txt', body: 'hello ruby', content_type: 'text/plain',
                    cache_control: 'max-age=3600', metadata: { 'origin' => 'ruby', 'n' => '1' })
  h = CLIENT.head_object(bucket: bucket, key: 'media/a.txt')
  expect('content type', h.content_type, 'text/plain')
  expect('cache control', h.cache_control, 'max-age=3600')
  expect('metadata', h.metadata, { 'origin' => 'ruby', 'n' => '1' })
  expect('length', h.content_length, 10)
  expect('etag', h.etag, "\"#{Digest::MD5.hexdigest('hello ruby')}\"")
  expect('body', CLIENT.get_object(bucket: bucket, key: 'media/a.txt').body.read, 'hello ruby')
  expect('range', CLIENT.get_object(bucket: bucket, key: 'media/a.txt', range: 'bytes=6-9').body.read, 'ruby')
  # In us-east-1 S3 answers its owner's second CreateBucket with 200 and leaves the bucket as it is.
  CLIENT.create_bucket(bucket: bucket)
  expect('after a second create', CLIENT.get_object(bucket: bucket, key: 'media/a.txt').body.read, 'hello ruby')
end

small = file_of('small.bin', 1 << 20)
large = file_of('large.bin', 12 << 20)

check 'upload_file: single part and multipart (threads), get to a file' do
  S3.bucket(bucket).object('small.bin').upload_file(small)
  obj = S3.bucket(bucket).object('large.bin')
  obj.upload_file(large, multipart_threshold: 5 << 20, thread_count: 4)
  expect('multipart etag parts', obj.etag.delete('"').split('-')[1], '3')
  dest = File.join(WORK, 'got-large.bin')
  obj.get(response_target: dest)
  expect('large bytes', md5_of_file(dest), md5_of_file(large))
  dest = File.join(WORK, 'got-small.bin')
  S3.bucket(bucket).object('small.bin').get(response_target: dest)
  expect('small bytes', md5_of_file(dest), md5_of_file(small))
end

check 'download_file: multipart object fetched part by part, single-part in ranges' do
  dest = File.join(WORK, 'dl-large.bin')
  S3.bucket(bucket).object('large.bin').download_file(dest, thread_count: 4)
  expect('by parts', md5_of_file(dest), md5_of_file(large))
  dest = File.join(WORK, 'dl-small.bin')
  S3.bucket(bucket).object('small.bin').download_file(dest, mode: 'get_range', chunk_size: 300_000)
  expect('by ranges', md5_of_file(dest), md5_of_file(small))
end

check 'upload_stream: an unknown-length body as a multipart upload' do
  obj = S3.bucket(bucket).object('streamed.bin')
  data = File.binread(large)
  obj.upload_stream(part_size: 5 << 20, thread_count: 2) do |w|
    data.bytes.each_slice(1 << 20) { |s| w << s.pack('C*') }
  end
  expect('streamed bytes', Digest::MD5.hexdigest(CLIENT.get_object(bucket: bucket, key: 'streamed.bin').body.read),
         md5_of_file(large))
end

check 'copy_to: same bucket, another bucket, metadata replaced, multipart copy' do
  src = S3.bucket(bucket).object('media/a.txt')
  src.copy_to(bucket: bucket, key: 'media/a-copy.txt')
  expect('same-bucket copy', CLIENT.get_object(bucket: bucket, key: 'media/a-copy.txt').body.read, 'hello ruby')
  src.copy_to(S3.bucket(other).object('a.txt'))
  h = CLIENT.head_object(bucket: other, key: 'a.txt')
  expect('copied metadata', h.metadata, { 'origin' => 'ruby', 'n' => '1' })
  CLIENT.copy_object(bucket: other, key: 'a2.txt', copy_source: "#{bucket}/media/a.txt",
                     metadata_directive: 'REPLACE', metadata: { 'fresh' => 'yes' }, content_type: 'text/x-new')
  h = CLIENT.head_object(bucket: other, key: 'a2.txt')
  expect('replaced metadata', [h.metadata, h.content_type], [{ 'fresh' => 'yes' }, 'text/x-new'])
  S3.bucket(bucket).object('large.bin').copy_to(bucket: other, key: 'large.bin', multipart_copy: true,
                                                content_length: 12 << 20)
  got = CLIENT.get_object(bucket: other, key: 'large.bin').body.read
  expect('multipart copy bytes', Digest::MD5.hexdigest(got), md5_of_file(large))
end

check 'listings: pages of list_objects_v2, prefixes and delimiters, Bucket#objects' do
  25.times { |i| CLIENT.put_object(bucket: other, key: format('list/k%02d', i), body: i.to_s) }
  CLIENT.put_object(bucket: other, key: 'list/sub/deep.txt', body: 'd')
  pages = CLIENT.list_objects_v2(bucket: other, prefix: 'list/k', max_keys: 10).to_a
  expect('pages', pages.size, 3)
  keys = pages.flat_map { |p| p.contents.map(&:key) }
  expect('paged keys', keys, (0...25).map { |i| format('list/k%02d', i) })
  r = CLIENT.list_objects_v2(bucket: other, prefix: 'list/', delimiter: '/', max_keys: 1000)
  expect('common prefixes', r.common_prefixes.map(&:prefix), ['list/sub/'])
  expect('keys beside them', r.contents.size, 25)
  expect('Bucket#objects', S3.bucket(other).objects(prefix: 'list/').map(&:key).size, 26)
  v1 = CLIENT.list_objects(bucket: other, prefix: 'list/k', max_keys: 10, marker: 'list/k09')
  expect('v1 marker', v1.contents.map(&:key).first, 'list/k10')
  expect('v1 truncated', v1.is_truncated, true)
end

check 'delete_objects: a batch, reported key by key; exists? after delete' do
  keys = (0...10).map { |i| { key: format('list/k%02d', i) } }
  out = CLIENT.delete_objects(bucket: other, delete: { objects: keys })
  expect('deleted', out.deleted.map(&:key).sort, keys.map { |k| k[:key] })
  expect('errors', out.errors, [])
  expect('left', CLIENT.list_objects_v2(bucket: other, prefix: 'list/k').key_count, 15)
  S3.bucket(other).object('a2.txt').delete
  expect('exists? after delete', S3.bucket(other).object('a2.txt').exists?, false)
  expect('exists?', S3.bucket(other).object('a.txt').exists?, true)
end

check 'presigned GET and PUT through Net::HTTP; an expired URL is refused' do
  get = S3.bucket(bucket).object('media/a.txt').presigned_url(:get, expires_in: 600)
  r = http(:Get, get)
  expect('presigned GET', [r.code, r.body], ['200', 'hello ruby'])
  put = S3.bucket(bucket).object('presigned/put.txt').presigned_url(:put, expires_in: 600)
  r = http(:Put, put, 'put through a URL')
  expect('presigned PUT status', r.code, '200')
  expect('presigned PUT body', CLIENT.get_object(bucket: bucket, key: 'presigned/put.txt').body.read,
         'put through a URL')
  short = S3.bucket(bucket).object('media/a.txt').presigned_url(:get, expires_in: 1)
  sleep 2
  r = http(:Get, short)
  expect('expired URL status', r.code, '403')
  raise "expired URL answer: #{r.body}" unless r.body.include?('<Code>AccessDenied</Code>')
end

check 'presigned POST: a form upload within its length range, one over it refused' do
  post = S3.bucket(bucket).presigned_post(key: 'forms/${filename}', content_length_range: 1..1024,
                                           success_action_status: '201')
  upload = lambda do |name, bytes|
    uri = URI(post.url)
    req = Net::HTTP::Post.new(uri)
    req.set_form(post.fields.to_a + [['file', StringIO.new(bytes), { filename: name }]], 'multipart/form-data')
    Net::HTTP.start(uri.host, uri.port) { |h| h.request(req) }
  end
  r = upload.call('note.txt', 'posted')
  expect('POST status', r.code, '201')
  raise "POST answer lacks the key: #{r.body}" unless r.body.include?('<Key>forms/note.txt</Key>')
  expect('posted bytes', CLIENT.get_object(bucket: bucket, key: 'forms/note.txt').body.read, 'posted')
  r = upload.call('big.txt', 'x' * 2048)
  expect('over the range', r.code, '400')
  raise "over-range answer: #{r.body}" unless r.body.include?('<Code>EntityTooLarge</Code>')
  expect('nothing stored', S3.bucket(bucket).object('forms/big.txt').exists?, false)
end

check 'public-read objects (Mastodon) where the bucket takes ACLs, and not where it does not' do
  acl_bucket = "#{bucket}-media"
  CLIENT.create_bucket(bucket: acl_bucket, object_ownership: 'ObjectWriter')
  CLIENT.put_object(bucket: acl_bucket, key: 'avatars/1.png', body: 'png', acl: 'public-read',
                    content_type: 'image/png')
  r = http(:Get, "#{ENDPOINT}/#{acl_bucket}/avatars/1.png")
  expect('anonymous GET of a public-read object', [r.code, r.body, r['content-type']], ['200', 'png', 'image/png'])
  CLIENT.put_object(bucket: acl_bucket, key: 'private/1.png', body: 'png')
  expect('anonymous GET of a private object', http(:Get, "#{ENDPOINT}/#{acl_bucket}/private/1.png").code, '403')
  grants = CLIENT.get_object_acl(bucket: acl_bucket, key: 'avatars/1.png').grants
  raise "no AllUsers READ grant: #{grants}" unless
    grants.any? { |g| g.permission == 'READ' && g.grantee.uri.to_s.end_with?('/global/AllUsers') }
  refused('public-read where ACLs are off', Aws::S3::Errors::AccessControlListNotSupported, 400) do
    CLIENT.put_object(bucket: bucket, key: 'acl.txt', body: 'x', acl: 'public-read')
  end
  S3.bucket(acl_bucket).delete!
end

check 'tagging: put, get, and on upload' do
  CLIENT.put_object_tagging(bucket: bucket, key: 'media/a.txt',
                            tagging: { tag_set: [{ key: 'kind', value: 'text' }, { key: 'a', value: '1' }] })
  tags = CLIENT.get_object_tagging(bucket: bucket, key: 'media/a.txt').tag_set.map { |t| [t.key, t.value] }
  expect('tags', tags.sort, [%w[a 1], %w[kind text]])
  CLIENT.put_object(bucket: bucket, key: 'tagged.txt', body: 't', tagging: 'x=y&z=w')
  tags = CLIENT.get_object_tagging(bucket: bucket, key: 'tagged.txt').tag_set.map { |t| [t.key, t.value] }
  expect('tags from the header', tags.sort, [%w[x y], %w[z w]])
end

check "S3's errors as the SDK's classes" do
  refused('GET of a missing key', Aws::S3::Errors::NoSuchKey, 404) { CLIENT.get_object(bucket: bucket, key: 'nope') }
  refused('HEAD of a missing key', Aws::S3::Errors::NotFound, 404) { CLIENT.head_object(bucket: bucket, key: 'nope') }
  refused('a missing bucket', Aws::S3::Errors::NoSuchBucket, 404) do
    CLIENT.list_objects_v2(bucket: "#{bucket}-missing")
  end
  refused('deleting a bucket with objects', Aws::S3::Errors::BucketNotEmpty, 409) { CLIENT.delete_bucket(bucket: other) }
  refused('an unsatisfiable range', Aws::S3::Errors::InvalidRange, 416) do
    CLIENT.get_object(bucket: bucket, key: 'media/a.txt', range: 'bytes=100-200')
  end
  wrong = Aws::S3::Client.new(endpoint: ENDPOINT, region: 'us-east-1', force_path_style: true,
                              access_key_id: ENV.fetch('AWS_ACCESS_KEY_ID'), secret_access_key: 'wrong-secret')
  refused('a wrong secret', Aws::S3::Errors::SignatureDoesNotMatch, 403) { wrong.list_buckets }
end

check 'Bucket#delete!: every object, then the bucket' do
  [bucket, other].each do |b|
    S3.bucket(b).delete!
    expect("#{b} gone", S3.bucket(b).exists?, false)
  end
end

FileUtils.rm_rf(WORK)
if $failed.empty?
  puts 'ruby sdk suite: all checks passed'
else
  puts "ruby sdk suite: #{$failed.size} failed: #{$failed.join('; ')}"
  exit 1
end
