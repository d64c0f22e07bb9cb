// The AWS SDK for Go v1 (Debian's aws-sdk-go), as Go tools built on it before v2 use S3
// (Velero, Loki and Thanos releases, Harbor): path style, the s3manager uploader with parts in
// parallel (a known length and an unknown one), the downloader's parallel ranged GETs, waiters,
// Content-MD5 checked both ways, ranges, paginated listings (v1 and v2), copies replacing
// metadata, presigned GET and PUT, tagging, and the batch delete of a whole bucket. Exits 1 at the
// first answer that is not S3's.
//
// Usage: main ENDPOINT ACCESS_KEY SECRET_KEY
package main

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/credentials"
	"github.com/aws/aws-sdk-go/aws/session"
	"github.com/aws/aws-sdk-go/service/s3"
	"github.com/aws/aws-sdk-go/service/s3/s3manager"
)

func must(what string, err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %s: %v\n", what, err)
		os.Exit(1)
	}
}

func main() {
	ep, key, secret := os.Args[1], os.Args[2], os.Args[3]
	sess := session.Must(session.NewSession(&aws.Config{
		Endpoint: aws.String(ep), Region: aws.String("us-east-1"), S3ForcePathStyle: aws.Bool(true),
		Credentials: credentials.NewStaticCredentials(key, secret, ""),
	}))
	c := s3.New(sess)
	b := fmt.Sprintf("gov1-%d", time.Now().UnixNano()%1000000)
	_, err := c.CreateBucket(&s3.CreateBucketInput{Bucket: aws.String(b)})
	must("create", err)
	must("wait", c.WaitUntilBucketExists(&s3.HeadBucketInput{Bucket: aws.String(b)}))
	data := make([]byte, 23*1024*1024+17)
	for i := range data {
		data[i] = byte(i * 31 % 251)
	}
	up := s3manager.NewUploader(sess, func(u *s3manager.Uploader) { u.PartSize = 5 * 1024 * 1024; u.Concurrency = 4 })
	out, err := up.Upload(&s3manager.UploadInput{Bucket: aws.String(b), Key: aws.String("big/obj.bin"), Body: bytes.NewReader(data), ContentType: aws.String("application/x-test"), Metadata: map[string]*string{"Origin": aws.String("v1")}})
	must("upload", err)
	fmt.Println("uploaded", out.Location)
	// Unknown length: the uploader reads parts from a plain reader.
	_, err = up.Upload(&s3manager.UploadInput{Bucket: aws.String(b), Key: aws.String("big/stream.bin"), Body: io.MultiReader(bytes.NewReader(data[:7*1024*1024]), strings.NewReader("tail"))})
	must("upload stream", err)
	dl := s3manager.NewDownloader(sess, func(d *s3manager.Downloader) { d.PartSize = 4 * 1024 * 1024; d.Concurrency = 4 })
	buf := aws.NewWriteAtBuffer(nil)
	n, err := dl.Download(buf, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("big/obj.bin")})
	must("download", err)
	if n != int64(len(data)) || !bytes.Equal(buf.Bytes(), data) {
		must("download", fmt.Errorf("%d bytes differ", n))
	}
	h, err := c.HeadObject(&s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("big/obj.bin")})
	must("head", err)
	if *h.ContentType != "application/x-test" || *h.Metadata["Origin"] != "v1" || !strings.HasSuffix(*h.ETag, "-5\"") {
		must("head", fmt.Errorf("%v", h))
	}
	sum := md5.Sum([]byte("small"))
	_, err = c.PutObject(&s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("small"), Body: strings.NewReader("small"), ContentMD5: aws.String(base64.StdEncoding.EncodeToString(sum[:]))})
	must("put md5", err)
	_, err = c.PutObject(&s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("bad"), Body: strings.NewReader("other"), ContentMD5: aws.String(base64.StdEncoding.EncodeToString(sum[:]))})
	if err == nil || !strings.Contains(err.Error(), "BadDigest") {
		must("bad md5", fmt.Errorf("accepted: %v", err))
	}
	r, err := c.GetObject(&s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("big/obj.bin"), Range: aws.String("bytes=100-199")})
	must("range", err)
	got, _ := io.ReadAll(r.Body)
	if !bytes.Equal(got, data[100:200]) || *r.ContentRange != fmt.Sprintf("bytes 100-199/%d", len(data)) {
		must("range", fmt.Errorf("%q", *r.ContentRange))
	}
	for i := 0; i < 25; i++ {
		_, err = c.PutObject(&s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(fmt.Sprintf("list/k%02d", i)), Body: strings.NewReader("x")})
		must("put list", err)
	}
	count := 0
	must("list v2", c.ListObjectsV2Pages(&s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String("list/"), MaxKeys: aws.Int64(7)}, func(p *s3.ListObjectsV2Output, last bool) bool { count += len(p.Contents); return true }))
	count1 := 0
	must("list v1", c.ListObjectsPages(&s3.ListObjectsInput{Bucket: aws.String(b), Prefix: aws.String("list/"), MaxKeys: aws.Int64(6)}, func(p *s3.ListObjectsOutput, last bool) bool { count1 += len(p.Contents); return true }))
	if count != 25 || count1 != 25 {
		must("list", fmt.Errorf("%d / %d", count, count1))
	}
	_, err = c.CopyObject(&s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("copy"), CopySource: aws.String(b + "/big/obj.bin"), MetadataDirective: aws.String("REPLACE"), ContentType: aws.String("text/x")})
	must("copy", err)
	req, _ := c.GetObjectRequest(&s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("small")})
	url, err := req.Presign(5 * time.Minute)
	must("presign", err)
	resp, err := http.Get(url)
	must("presigned get", err)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "small" {
		must("presigned get", fmt.Errorf("%d %q", resp.StatusCode, body))
	}
	preq, _ := c.PutObjectRequest(&s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("presigned-put")})
	purl, err := preq.Presign(5 * time.Minute)
	must("presign put", err)
	hreq, _ := http.NewRequest("PUT", purl, strings.NewReader("via url"))
	presp, err := http.DefaultClient.Do(hreq)
	must("presigned put", err)
	if presp.StatusCode != 200 {
		b2, _ := io.ReadAll(presp.Body)
		must("presigned put", fmt.Errorf("%d %s", presp.StatusCode, b2))
	}
	_, err = c.PutObjectTagging(&s3.PutObjectTaggingInput{Bucket: aws.String(b), Key: aws.String("small"), Tagging: &s3.Tagging{TagSet: []*s3.Tag{{Key: aws.String("a"), Value: aws.String("b")}}}})
	must("tagging", err)
	iter := s3manager.NewDeleteListIterator(c, &s3.ListObjectsInput{Bucket: aws.String(b)})
	must("batch delete", s3manager.NewBatchDeleteWithClient(c).Delete(aws.BackgroundContext(), iter))
	_, err = c.DeleteBucket(&s3.DeleteBucketInput{Bucket: aws.String(b)})
	must("delete bucket", err)
	must("wait gone", c.WaitUntilBucketNotExists(&s3.HeadBucketInput{Bucket: aws.String(b)}))
	fmt.Println("PASS: aws-sdk-go v1")
}
