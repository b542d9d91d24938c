#!/usr/bin/env bash
# Builds the Dockerfile with Debian's Podman and runs the image as
# docs/scale-out.md and the Dockerfile's header document, on a machine that
# cannot reach a container registry (like the project's): the two base
# images are replaced by local stand-ins of the same names, built here
#   golang:1.26-bookworm                    busybox-static as /bin/sh, this
#                                           machine's Go toolchain, CA certificates
#   gcr.io/distroless/static-debian12:nonroot  /etc/passwd with nonroot (65532),
#                                           CA certificates, USER 65532
# so every step of the Dockerfile runs for real (go mod download through the
# module proxy, the static build, the copy into the runtime image), but not
# on the real base images. Where a registry is reachable, skip the stand-ins
# (STANDINS=0).
#
# It then checks the bind mount: as the image's non-root user the mounted
# results directory (yours, 0755) is not writable, and with --user
# "$(id -u):$(id -g)", as documented, the sweep writes its summary there.
#
# Not part of .ci/run: it costs a full build of simtrain inside the
# container. Needs root (it installs podman, runc and busybox-static with
# apt-get). This machine's sandbox needs three workarounds, all in PODMAN
# below: runc instead of crun (crun rejects its hybrid cgroups) and limits
# lowered to fit (it may not raise RLIMIT_NPROC or RLIMIT_NOFILE).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v busybox >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends podman runc busybox-static >/dev/null
fi
limits=(--ulimit "nofile=$(ulimit -n):$(ulimit -Hn)" --ulimit nproc=1000:1000)
PODMAN=(podman --runtime runc)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ ${STANDINS:-1} == 1 ]]; then
  echo "== stand-in base images (no registry reachable)"
  g="$work/golang" s="$work/static"
  mkdir -p "$g"/{bin,etc/ssl/certs,tmp,root,usr/local} "$s"/{etc/ssl/certs,tmp,home/nonroot}
  cp "$(command -v busybox)" "$g/bin/busybox"
  for c in sh ls mkdir cp rm cat env chmod ln; do ln -s busybox "$g/bin/$c"; done
  cp -a "$(go env GOROOT)" "$g/usr/local/go"
  cp /etc/ssl/certs/ca-certificates.crt "$g/etc/ssl/certs/"
  cp /etc/ssl/certs/ca-certificates.crt "$s/etc/ssl/certs/"
  printf 'root:x:0:0:root:/root:/bin/sh\n' > "$g/etc/passwd"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$s/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' > "$s/etc/group"
  chmod 1777 "$g/tmp" "$s/tmp"
  chown 65532:65532 "$s/home/nonroot"
  tar -C "$g" -c . | podman import --change 'ENV PATH=/usr/local/go/bin:/go/bin:/bin' \
    --change 'ENV GOPATH=/go' --change 'ENV GOTOOLCHAIN=local' - docker.io/library/golang:1.26-bookworm >/dev/null
  tar -C "$s" -c . | podman import --change 'USER 65532:65532' --change 'ENV HOME=/home/nonroot' \
    - gcr.io/distroless/static-debian12:nonroot >/dev/null
fi

echo "== podman build (the Dockerfile as it is)"
# The host's Go build cache is mounted for the build (RUN steps see it at
# the stand-in's default GOCACHE): -trimpath makes its entries valid inside,
# so the build is as warm as a host build; the image is the same.
"${PODMAN[@]}" build --pull=never --network=host "${limits[@]}" -v "$(go env GOCACHE):/root/.cache/go-build" \
  --build-arg VERSION="$(git describe --tags --always)" --build-arg COMMIT="$(git rev-parse HEAD)" -t simtrain .
"${PODMAN[@]}" run --rm "${limits[@]}" simtrain version

echo "== the documented bind mount"
mkdir -p "$work/results"
run=("${PODMAN[@]}" run --rm "${limits[@]}" -v "$work/results:/results")
sweep=(sweep scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml --out /results/l70 --quiet)
if "${run[@]}" simtrain "${sweep[@]}" 2>"$work/err"; then
  echo "note: the image's own user could write the mount (a rootless engine maps it to you)"
else
  echo "as uid 65532, as expected: $(tail -1 "$work/err")"
fi
"${run[@]}" --user "$(id -u):$(id -g)" simtrain "${sweep[@]}" | tail -1
ls -ln "$work/results/l70"
[[ $(stat -c %u "$work/results/l70/summary.arrow") == "$(id -u)" ]] || { echo "FAIL: the summary is not owned by $(id -u)" >&2; exit 1; }
echo "ok: built, ran, and wrote into the bind mount as $(id -un)"
