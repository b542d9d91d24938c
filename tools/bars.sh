#!/usr/bin/env bash
# Issue 18's speed bars, measured in one command: each bar's command timed
# the way the README's performance table is (tools/timeit: medians of N runs,
# CPU = user + system of the finished command, each run after 6 s idle), and
# a table of the figures against their bars.
#
#   tools/bars.sh [--runs N] [--bin PATH] [--cold]
#
# --runs N   runs of each timed command (default 12; every rank's run takes
#            N/3, at least 2)
# --bin PATH time this simtrain binary (default: build ./cmd/simtrain and
#            copy it, as the README's figures do)
# --cold     also time a cold `go build ./cmd/simtrain` (an empty build
#            cache; modules already downloaded), about a minute more
#
# The bars: the 1,000-point 70B sweep ≤ 0.6 s of CPU (0.6 ms a point) and
# ≤ 0.333 s of wall (3,000 points a second); the 405B run on 16,384 GPUs
# ≤ 1 s of CPU, and on 131,072 GPUs ≤ 1.5× that; every rank of the 16,384
# GPUs ≤ 5 s of CPU and ≤ 1.5 GB; the engine ≥ 20 M events per CPU-second at
# 1,000 pending events; a cold build ≤ 2 minutes with no RPC stack among its
# packages. Exits 1 when a bar is missed, 2 on a usage error. A measurement
# for people, not a test: this machine's speed drifts by 15–25% within
# minutes, so say when and where a figure was taken.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=12
bin=""
cold=0
while (($#)); do
  case "$1" in
    --runs) runs=${2:-}; shift 2 || { echo "bars.sh: --runs needs a count" >&2; exit 2; } ;;
    --bin) bin=${2:-}; shift 2 || { echo "bars.sh: --bin needs a path" >&2; exit 2; } ;;
    --cold) cold=1; shift ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "bars.sh: unknown argument $1 (valid: --runs N, --bin PATH, --cold)" >&2; exit 2 ;;
  esac
done
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
  echo "bars.sh: --runs $runs is not a positive count" >&2
  exit 2
fi

if [[ -n $bin && ! ( -f $bin && -x $bin ) ]]; then
  echo "bars.sh: --bin $bin is not an executable file" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/timeit" ./tools/timeit
if [[ -z $bin ]]; then
  go build -o "$tmp/simtrain.built" ./cmd/simtrain
  # A copy starts 2–3 ms sooner than the file as the linker wrote it
  # (tools/timeit's doc comment).
  cp "$tmp/simtrain.built" "$tmp/simtrain"
  bin=$tmp/simtrain
fi
# Output files on tmpfs where there is one, as the README's figures.
if [[ -d /dev/shm && -w /dev/shm ]]; then
  export TMPDIR=/dev/shm
fi

rows=()
missed=0
began=$(date -u '+%Y-%m-%d %H:%M')

# row NAME MEASURED BAR OK: one line of the table (OK 1 or 0).
row() {
  local verdict=met
  if [[ $4 != 1 ]]; then
    verdict=MISSED
    missed=1
  fi
  rows+=("| $1 | $2 | $3 | $verdict |")
}

# le A B: 1 when A ≤ B (decimals), else 0.
le() { awk -v a="$1" -v b="$2" 'BEGIN { print (a <= b) ? 1 : 0 }'; }

# timed N ARGS...: runs simtrain ARGS N times after 6 s idle each and sets
# cpu, wall (seconds) and rss (MB) to the medians tools/timeit prints.
timed() {
  local n=$1
  shift
  echo "bars.sh: $n runs of simtrain $*" >&2
  local line
  if ! line=$("$tmp/timeit" -n "$n" -sleep 6s -- "$bin" "$@" | tail -1); then
    echo "bars.sh: simtrain $* did not run to the end (tools/timeit said why above)" >&2
    exit 1
  fi
  cpu=$(sed -E 's/.*CPU median ([0-9.]+) s.*/\1/' <<<"$line")
  wall=$(sed -E 's/.*wall median ([0-9.]+) s.*/\1/' <<<"$line")
  rss=$(sed -E 's/.*max RSS ([0-9]+) MB.*/\1/' <<<"$line")
  if ! [[ $cpu =~ ^[0-9.]+$ && $wall =~ ^[0-9.]+$ && $rss =~ ^[0-9]+$ ]]; then
    echo "bars.sh: cannot read timeit's line: $line" >&2
    exit 1
  fi
}

timed "$runs" sweep scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml --quiet --out '{out}'
row "70B sweep, 1,000 points, CPU" "$cpu s" "≤ 0.6 s" "$(le "$cpu" 0.6)"
row "70B sweep, wall" "$wall s ($(awk -v w="$wall" 'BEGIN { printf "%.0f", 1000 / w }') points/s)" "≤ 0.333 s" "$(le "$wall" 0.333)"

timed "$runs" run scenarios/llama3-405b-16k-h100.yaml --quiet --out '{out}'
run16k=$cpu
row "405B on 16,384 GPUs, default mode, CPU" "$cpu s" "≤ 1 s" "$(le "$cpu" 1)"

timed "$runs" run scenarios/llama3-405b-16k-h100.yaml --set cluster.nodes=16384 --set parallel.dp=1024 --set training.global_batch=16384 --quiet --out '{out}'
ratio=$(awk -v a="$cpu" -v b="$run16k" 'BEGIN { printf "%.2f", a / b }')
row "the same on 131,072 GPUs, CPU" "$cpu s (${ratio}×)" "≤ 1.5×" "$(le "$ratio" 1.5)"

every=$((runs / 3))
((every >= 2)) || every=2
timed "$every" run scenarios/llama3-405b-16k-h100.yaml --all-ranks --no-timeline --quiet --out '{out}'
row "every rank of 16,384 GPUs, CPU" "$cpu s" "≤ 5 s" "$(le "$cpu" 5)"
row "every rank of 16,384 GPUs, peak RSS" "$rss MB" "≤ 1,500 MB" "$(le "$rss" 1500)"

echo "bars.sh: the engine's benchmark at 1,000 pending events" >&2
events=$(go test -run '^$' -bench 'Hold1k$' -benchtime 2000000x -count 3 ./sim/engine |
  awk '/^BenchmarkHold1k/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Mevents/cpu-s") print $i }' |
  sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }')
if [[ -z $events ]]; then
  echo "bars.sh: the engine's benchmark printed no Mevents/cpu-s" >&2
  exit 1
fi
row "engine, 1,000 pending events (median of 3)" "$events M events/cpu-s" "≥ 20 M" "$(le 20 "$events")"

if ((cold)); then
  echo "bars.sh: a cold go build ./cmd/simtrain" >&2
  # The modules first, so that the build's time holds no download.
  go mod download
  # An empty build cache under $tmp, so that the exit trap removes it
  # whether or not the build succeeds.
  start=$(date +%s.%N)
  GOCACHE=$tmp/gocache go build -o "$tmp/cold" ./cmd/simtrain
  end=$(date +%s.%N)
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  row "cold go build ./cmd/simtrain, wall" "$secs s" "≤ 120 s" "$(le "$secs" 120)"
  deps=$(go list -deps ./cmd/simtrain)
  pkgs=$(wc -l <<<"$deps")
  rpc=$(grep -c -E '^google\.golang\.org/(grpc|protobuf)' <<<"$deps" || true)
  row "RPC packages linked (of $pkgs)" "$rpc" "0" "$( ((rpc == 0)) && echo 1 || echo 0)"
fi

echo "issue 18's bars, $began–$(date -u '+%H:%M') UTC, $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || uname -m):"
echo
echo "| what | measured (median) | bar | |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit "$missed"
