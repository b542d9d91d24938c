# simtrain in a small image, for sweeps on Kubernetes (deploy/k8s/sweep-job.yaml)
# or anywhere else a container runs:
#
#   docker build -t simtrain .
#   docker run --rm -v "$PWD/results:/results" simtrain \
#     sweep scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml --out /results/l70
#
# The binary is static (CGO_ENABLED=0), so the runtime image needs no libc or
# shell; it runs as the distroless "nonroot" user (uid 65532). The bundled
# scenarios are in /simtrain/scenarios, the working directory.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY sim ./sim
ARG VERSION=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/simtrain ./cmd/simtrain

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/simtrain /usr/local/bin/simtrain
COPY scenarios /simtrain/scenarios
WORKDIR /simtrain
ENTRYPOINT ["/usr/local/bin/simtrain"]
CMD ["--help"]
