#!/usr/bin/env bash
# Install and release checks (issue 21). Called from .ci/run. It
#   1. builds this platform's release archive with tools/release.sh (a
#      -trimpath build from an empty build cache for those flags: it is
#      timed, as issue 18 asks a cold build to take at most 2 minutes on
#      two cores), unpacks it and checks that `simtrain version` names the
#      stamped version and commit, and that the archive's binary runs the
#      bundled quickstart scenario;
#   2. installs with `go install` from this clone into an empty GOPATH (its
#      own module cache, so every module comes from the proxy and go.sum
#      must be complete) and runs the installed binary. -trimpath and
#      CGO_ENABLED=0 only let it reuse the compile of step 1.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

platform="$(go env GOOS)/$(go env GOARCH)"
start=$(date +%s)
bash tools/release.sh --out "$work/dist" "$platform"
echo "release build of $platform: $(( $(date +%s) - start )) s ($(nproc) CPUs)"
archive=$(ls "$work"/dist/simtrain_*.tar.gz)
tar -C "$work" -xzf "$archive"
dir="$work/$(basename "$archive" .tar.gz)"
v=$("$dir/simtrain" version)
echo "$v"
commit=$(git rev-parse HEAD | cut -c1-12)
if [[ ! $v =~ ^simtrain\ v[^\ ]+\ ${commit}\ built\ [0-9T:-]+Z\ ${platform}\ go ]]; then
  echo "FAIL: the release binary prints '$v'; want the stamped version, commit $commit and build date" >&2
  exit 1
fi
(cd "$dir" && ./simtrain run scenarios/quickstart.yaml --out "$work/out" --quiet | grep -E '^  step time')
(cd "$work/dist" && sha256sum -c SHA256SUMS)

gopath="$work/gopath"
mkdir -p "$gopath"
GOPATH="$gopath" GOMODCACHE="$gopath/pkg/mod" GOBIN="" CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -modcacherw" \
  go install -trimpath ./cmd/simtrain
ls "$gopath/bin"
"$gopath/bin/simtrain" version
"$gopath/bin/simtrain" run scenarios/quickstart.yaml --out "$work/installed" --quiet --parquet --report | grep -E '^  (step time|outputs)'
ls "$work/installed/quickstart-llama3-8b-fsdp"
# issue 21: plan from the installed binary, the one-command journey.
(cd "$work" && "$gopath/bin/simtrain" plan --model llama3-8b --gpu h100-sxm --gpus 8 --tokens 100B --seq 2048 --global-batch 64 --quiet --format json) \
  | grep -o '"layout":"[^"]*"' | head -1
