#!/usr/bin/env bash
# Release archives of simtrain: one static binary per platform, stamped with
# its version, commit and build date (`simtrain version` prints them), packed
# with the README, the output-format notes and the bundled scenarios.
#
#   tools/release.sh [--out DIR] [--version V] [GOOS/GOARCH...]
#
# Without platforms it builds linux/amd64, linux/arm64, darwin/amd64 and
# darwin/arm64. VERSION defaults to `git describe --tags --always --dirty`
# (v0.0.0-<commit> in a clone without tags); the date is the commit's time
# (UTC), so rebuilding a commit gives the same stamp. Writes
# DIR/simtrain_<version>_<os>_<arch>.tar.gz and DIR/SHA256SUMS (DIR defaults
# to dist/). CGO is off, so a binary runs on any Linux or macOS of its
# architecture without a C library.
set -euo pipefail
cd "$(dirname "$0")/.."

out=dist
ver=""
targets=()
while (($#)); do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --version) ver=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "release.sh: unknown flag $1 (valid: --out DIR, --version V)" >&2; exit 2 ;;
    */*) targets+=("$1"); shift ;;
    *) echo "release.sh: $1 is not GOOS/GOARCH (e.g. linux/amd64)" >&2; exit 2 ;;
  esac
done
((${#targets[@]})) || targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)

commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [[ -z $ver ]]; then
  ver=$(git describe --tags --always --dirty 2>/dev/null || echo unknown)
  [[ $ver == v* ]] || ver="v0.0.0-$ver"
fi
date=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
ldflags="-s -w -X main.version=$ver -X main.commit=$commit -X main.date=$date"

mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for t in "${targets[@]}"; do
  goos=${t%/*} goarch=${t#*/}
  name="simtrain_${ver}_${goos}_${goarch}"
  dir="$stage/$name"
  mkdir -p "$dir/results"
  echo "== $name"
  CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -ldflags "$ldflags" -o "$dir/simtrain" ./cmd/simtrain
  cp README.md "$dir/"
  cp results/README.md "$dir/results/"
  cp -R scenarios "$dir/"
  # Same bytes for the same commit: fixed owner, mode and time, sorted names.
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="$date" \
    -C "$stage" -czf "$out/$name.tar.gz" "$name"
done
(cd "$out" && sha256sum simtrain_"${ver}"_*.tar.gz > SHA256SUMS)
echo "wrote ${#targets[@]} archives and SHA256SUMS to $out (version $ver, commit ${commit:0:12}, date $date)"
