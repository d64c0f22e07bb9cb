#!/usr/bin/env bash
# HTSlib 1.16 (Debian's samtools, bcftools and tabix; the genomics toolkits' I/O library): its S3
# plugin is a client of its own in C over libcurl, which reads with ranged GETs and writes in
# multipart uploads. Alignments (BAM) and variants (VCF.gz) read by region through their indexes,
# BAM, index and VCF files written into the bucket (5 MiB parts) and read back; every result is
# compared with the same command on the local files. HTSlib finds each part's ETag by searching
# the answer for `ETag: "`, so uploads aborted while the gateway spelled header names in lower
# case (gateway/src/header_case.rs).
source "$(dirname "$0")/lib.sh"
for t in samtools bcftools tabix bgzip; do
  command -v "$t" >/dev/null || fail "$t missing (apt-get install samtools bcftools tabix; scripts/install-deps.sh test)"
done
B=htslib-$RANDOM
aws --endpoint-url "$ENDPOINT" s3 mb "s3://$B" >/dev/null
export HTS_S3_HOST=${ENDPOINT#*://} HTS_S3_ADDRESS_STYLE=path HTS_S3_PART_SIZE=5
S3="s3+http://$B"
cd "$WORK"

echo "  - 60,000 reads on two contigs and a VCF of 9,455 sites, made and indexed locally"
python3 - <<'PY'
import random
random.seed(5)
contigs = [("chr1", 200000), ("chr2", 150000)]
with open("reads.sam", "w") as f:
    for c, n in contigs:
        f.write(f"@SQ\tSN:{c}\tLN:{n}\n")
    for i in range(60000):
        c, n = random.choice(contigs)
        seq = "".join(random.choice("ACGT") for _ in range(50))
        f.write(f"r{i}\t0\t{c}\t{random.randint(1, n - 100)}\t60\t50M\t*\t0\t0\t{seq}\t{'I' * 50}\n")
with open("sites.vcf", "w") as f:
    f.write("##fileformat=VCFv4.2\n")
    for c, n in contigs:
        f.write(f"##contig=<ID={c},length={n}>\n")
    f.write("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n")
    for c, n in contigs:
        for p in range(100, n, 37):
            f.write(f"{c}\t{p}\t.\tA\tG\t50\tPASS\t.\n")
PY
samtools sort -o reads.bam reads.sam 2>/dev/null && samtools index reads.bam || fail "local BAM"
bgzip -f sites.vcf && tabix -p vcf sites.vcf.gz || fail "local VCF"
for f in reads.bam reads.bam.bai sites.vcf.gz sites.vcf.gz.tbi; do
  aws --endpoint-url "$ENDPOINT" s3 cp --quiet "$f" "s3://$B/in/$f" || fail "upload of $f"
done

same() { # NAME CMD_ON_S3 CMD_LOCAL: both outputs must match
  local a b
  a=$(eval "$2" | md5sum) || fail "$1: $2"
  b=$(eval "$3" | md5sum)
  [ "$a" = "$b" ] || fail "$1: '$2' differs from '$3'"
}

echo "  - reads by region through the BAM's index (ranged GETs), headers, index statistics"
same "header" "samtools view --no-PG -H $S3/in/reads.bam" "samtools view --no-PG -H reads.bam"
for r in chr1:1000-50000 chr2 chr2:149000-150000 chr1:5000-5001; do
  same "region $r" "samtools view $S3/in/reads.bam $r" "samtools view reads.bam $r"
done
same "idxstats" "samtools idxstats $S3/in/reads.bam" "samtools idxstats reads.bam"
[ "$(samtools view -c "$S3/in/reads.bam" chr1:1000-50000)" -gt 1000 ] || fail "too few reads in the region"

echo "  - variants by region through the tabix index, with tabix and bcftools"
same "tabix" "tabix $S3/in/sites.vcf.gz chr2:1000-1200" "tabix sites.vcf.gz chr2:1000-1200"
same "bcftools" "bcftools view -H -r chr1:500-90000 $S3/in/sites.vcf.gz" "bcftools view -H -r chr1:500-90000 sites.vcf.gz"

echo "  - a sorted BAM (7 MiB, two parts), its index and a VCF.gz written into the bucket"
samtools sort -l 0 -o "$S3/out/sorted.bam" reads.sam 2>/dev/null || fail "samtools sort to the bucket"
samtools index -o "$S3/out/sorted.bam.bai" "$S3/out/sorted.bam" || fail "samtools index to the bucket"
samtools view -b -o "$S3/out/chr2.bam" "$S3/in/reads.bam" chr2 || fail "samtools view -o to the bucket"
bcftools view -Oz -o "$S3/out/sites.vcf.gz" "$S3/in/sites.vcf.gz" || fail "bcftools view -o to the bucket"
same "written BAM, by region" "samtools view $S3/out/sorted.bam chr1:20000-90000" "samtools view reads.bam chr1:20000-90000"
same "written BAM, whole" "samtools view $S3/out/sorted.bam" "samtools view reads.bam"
same "written subset" "samtools view $S3/out/chr2.bam" "samtools view reads.bam chr2"
same "written VCF" "bcftools view -H $S3/out/sites.vcf.gz" "bcftools view -H sites.vcf.gz"
grep -q 'operation="CompleteMultipartUpload" bucket="'"$B"'" key="out/sorted.bam"' "$WORK/gateway.log" ||
  fail "the sorted BAM was not written in parts"
parts=$(grep -c 'operation="UploadPart" bucket="'"$B"'" key="out/sorted.bam"' "$WORK/gateway.log")
[ "$parts" -ge 2 ] || fail "the sorted BAM was written in $parts part(s)"
! grep -q 'operation="AbortMultipartUpload"' "$WORK/gateway.log" || fail "HTSlib aborted an upload"
echo "htslib: ok"
