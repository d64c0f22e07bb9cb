#!/usr/bin/perl
# Net::Amazon::S3 (Debian's libnet-amazon-s3-perl, the Perl client behind backup and archive
# tools) against the gateway, with SigV2 and SigV4 signing: its bucket API (keys with
# attributes, files, listings paged by marker and rolled up by delimiter, copies, metadata
# edits, multi-object deletes, tags, ACLs, query-string URLs) and its client API (objects
# with content headers and user metadata, `Expires`, ranges, uploads begun and aborted). Dies
# at the first answer that is not S3's.
use strict;
use warnings;
use Net::Amazon::S3;
use Net::Amazon::S3::Client;
use Digest::MD5 qw(md5_hex);
use LWP::UserAgent;

my ($endpoint, $key, $secret, $work) = @ARGV;
die "usage: perl_s3.pl HOST:PORT KEY SECRET WORKDIR\n" unless $work;
my $checks = 0;
sub ok { my ($what, $cond, $detail) = @_; $checks++; die "FAIL: $what" . (defined $detail ? ": $detail" : "") . "\n" unless $cond; }

for my $sig (qw(V2 V4)) {
    my $s3 = Net::Amazon::S3->new(
        aws_access_key_id     => $key,
        aws_secret_access_key => $secret,
        host                  => $endpoint,
        secure                => 0,
        retry                 => 0,
        use_virtual_host      => 0,
        authorization_method  => "Net::Amazon::S3::Signature::$sig",
    );
    my $name = lc("perl-$sig-") . $$;
    my $b = $s3->add_bucket({ bucket => $name }) or die "add_bucket ($sig): " . ($s3->errstr // '') . "\n";
    ok("$sig bucket listed", grep { $_->bucket eq $name } @{ $s3->buckets->{buckets} });

    # Keys with attributes, read back.
    ok("$sig add_key", $b->add_key('dir/a b+c.txt', 'hello world',
        { content_type => 'text/plain', 'x-amz-meta-team' => 'vision', 'Cache-Control' => 'no-cache' }),
        $s3->errstr);
    my $v = $b->get_key('dir/a b+c.txt');
    ok("$sig get_key", $v && $v->{value} eq 'hello world' && $v->{content_type} eq 'text/plain'
        && $v->{etag} eq md5_hex('hello world') && ($v->{'x-amz-meta-team'} // '') eq 'vision', $s3->errstr);
    my $h = $b->head_key('dir/a b+c.txt');
    ok("$sig head_key", $h && $h->{content_length} == 11, $s3->errstr);
    ok("$sig missing key", !defined $b->get_key('nope'));

    # Files.
    my $file = "$work/file-$sig";
    open my $fh, '>', $file or die; print $fh map { chr(($_ * 7) % 256) } 1 .. 300_000; close $fh;
    ok("$sig add_key_filename", $b->add_key_filename('dir/file.bin', $file, { content_type => 'application/octet-stream' }), $s3->errstr);
    ok("$sig get_key_filename", $b->get_key_filename('dir/file.bin', 'GET', "$file.back"), $s3->errstr);
    ok("$sig file read back", system('cmp', '-s', $file, "$file.back") == 0);

    # Listings: by prefix, paged by marker, rolled up by delimiter.
    $b->add_key("many/k$_", "v$_") or die "add many/k$_\n" for 1 .. 12;
    my $page = $b->list({ prefix => 'many/', max_keys => 5 });
    ok("$sig page", $page && @{ $page->{keys} } == 5 && $page->{is_truncated}, $s3->errstr);
    my $rest = $b->list({ prefix => 'many/', marker => $page->{keys}[-1]{key} });
    ok("$sig marker", @{ $rest->{keys} } == 7 && !$rest->{is_truncated});
    my $all = $b->list_all({ prefix => 'many/' });
    ok("$sig list_all", @{ $all->{keys} } == 12);
    my $rolled = $b->list({ delimiter => '/' });
    # (The client strips the delimiter from each common prefix.)
    ok("$sig delimiter", join(',', sort @{ $rolled->{common_prefixes} }) eq 'dir,many' && !@{ $rolled->{keys} },
        join(',', @{ $rolled->{common_prefixes} }));

    # Copies and metadata edits.
    ok("$sig copy_key", $b->copy_key('dir/copy', "/$name/dir/a b+c.txt"), $s3->errstr);
    ok("$sig copy read", ($b->get_key('dir/copy') // {})->{value} eq 'hello world');
    ok("$sig edit_metadata", $b->edit_metadata('dir/copy', { 'x-amz-meta-edited' => 'yes', content_type => 'text/x-edited' }), $s3->errstr);
    my $e = $b->head_key('dir/copy');
    ok("$sig edited", ($e->{'x-amz-meta-edited'} // '') eq 'yes' && $e->{content_type} eq 'text/x-edited');

    # A signed URL.
    my $url = $b->query_string_authentication_uri('dir/a b+c.txt', time + 300);
    my $r = LWP::UserAgent->new->get($url);
    ok("$sig query string URL", $r->is_success && $r->decoded_content eq 'hello world', $r->status_line);

    # Tags and ACLs.
    # (Its V2 signer leaves `?tagging` out of the signed resource, which S3 includes: V4 only.)
    ok("$sig add_tags", $b->add_tags({ key => 'dir/copy', tags => { stage => 'raw' } }), $s3->errstr) if $sig eq 'V4';
    ok("$sig acl", ($b->get_acl('dir/copy') // '') =~ /FULL_CONTROL/);

    # The client API: objects with content headers, Expires, ranges, uploads.
    my $client = Net::Amazon::S3::Client->new(s3 => $s3);
    my $cb = $client->bucket(name => $name);
    my $o = $cb->object(key => 'obj/page.html', content_type => 'text/html', cache_control => 'max-age=60',
        expires => 'Thu, 01 Jan 2099 00:00:00 GMT', user_metadata => { owner => 'perl' });
    $o->put('<p>hi</p>');
    ok("$sig object exists", $cb->object(key => 'obj/page.html')->exists);
    my $got = $cb->object(key => 'obj/page.html');
    ok("$sig object get", $got->get eq '<p>hi</p>');
    ok("$sig range", $got->range('bytes=3-5')->get eq 'hi<');
    # (Its put_part, in Debian's 0.991, passes its constructor arguments it does not take:
    # multipart uploads cannot be driven through this version.)
    my $aborted = $cb->object(key => 'obj/aborted.bin');
    my $aid = $aborted->initiate_multipart_upload;
    ok("$sig initiate", $aid);
    $aborted->abort_multipart_upload(upload_id => $aid);
    ok("$sig abort", !$cb->object(key => 'obj/aborted.bin')->exists);

    # Deletes: one at a time and several at once; the bucket after.
    my @keys = ('dir/a b+c.txt', 'dir/file.bin', 'dir/copy', 'obj/page.html', map { "many/k$_" } 1 .. 12);
    ok("$sig delete_key", $b->delete_key(shift @keys), $s3->errstr);
    ok("$sig delete_multi_object", $b->delete_multi_object(@keys), $s3->errstr);
    ok("$sig empty", !@{ $b->list_all->{keys} });
    ok("$sig delete_bucket", $b->delete_bucket, $s3->errstr);
    print "  - $sig: done\n";
}
print "PASS: $checks checks\n";
