# Sourced by the public-suite scenarios: a virtual environment of pinned packages (never the
# system's Python, whose botocore the aws cli v1 needs at its own version), and the suites' test
# files, which their maintainers ship in the packages' source distributions on PyPI.
#
#   suite_venv NAME REQUIREMENT...   creates (once per requirement list) and activates a venv
#   suite_sdist PACKAGE==VERSION     unpacks that sdist under $WORK and prints its directory
suite_cache=${PENSTOCK_CACHE:-$HOME/.cache/penstock}/suites
suite_venv() {
  local name=$1; shift
  local dir=$suite_cache/$name want="$*"
  if [ "$(cat "$dir/.requirements" 2>/dev/null)" != "$want" ]; then
    rm -rf "$dir" && mkdir -p "$suite_cache"
    python3 -m venv "$dir" || fail "python3 -m venv failed (apt-get install python3-venv)"
    "$dir/bin/pip" install -q --disable-pip-version-check "$@" || fail "pip install $* failed"
    printf '%s' "$want" >"$dir/.requirements"
  fi
  # shellcheck disable=SC1091
  source "$dir/bin/activate"
}
suite_sdist() {
  local spec=$1 name=${1%%==*} version=${1##*==}
  python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: -d "$WORK/sdist" "$spec" \
    >/dev/null || fail "pip download $spec failed"
  tar xzf "$WORK/sdist/$name-$version.tar.gz" -C "$WORK" || fail "cannot unpack $spec"
  echo "$WORK/$name-$version"
}
