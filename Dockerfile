# simtrain in a small image, for sweeps on Kubernetes (deploy/k8s/sweep-job.yaml)
# or anywhere else a container runs:
#
#   docker build -t simtrain --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg COMMIT=$(git rev-parse HEAD) .
#   mkdir -p results
#   docker run --rm --user "$(id -u):$(id -g)" -v "$PWD/results:/results" simtrain \
#     sweep scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml --out /results/l70
#
# The binary is static (CGO_ENABLED=0), so the runtime image needs no libc or
# shell. It runs as the distroless "nonroot" user (uid 65532) unless told
# otherwise, and that user cannot write into a bind-mounted directory owned
# by you on Linux: --user "$(id -u):$(id -g)" runs it as you, so the results
# are yours (simtrain needs no home directory or passwd entry). Rootless
# Podman maps your uid to root in the container, so there plain
# `podman run -v "$PWD/results:/results" ...` works, as does --userns=keep-id.
# The bundled scenarios are in /simtrain/scenarios, the working directory.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY sim ./sim
ARG VERSION=""
ARG COMMIT=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" -o /out/simtrain ./cmd/simtrain

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/simtrain /usr/local/bin/simtrain
COPY scenarios /simtrain/scenarios
WORKDIR /simtrain
ENTRYPOINT ["/usr/local/bin/simtrain"]
CMD ["--help"]
