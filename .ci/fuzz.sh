#!/usr/bin/env bash
# Fuzzing (issue 19). Every fuzz target's seed corpus already runs in
# `go test ./...`; this fuzzes each target for FUZZTIME (default 5s, the
# short pass .ci/run makes, about 3 minutes with compilation on 2 cores).
# The long run is FUZZTIME=60s bash .ci/fuzz.sh (about 12 minutes). A
# failing input is saved under the package's testdata/fuzz/<target>/ and
# then replays in `go test` until fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-5s}"

targets=(
  "./sim/scenario FuzzParse"      # scenario files
  "./sim/sweep FuzzParseSweep"    # sweep files
  "./sim/simulation FuzzSimulate" # random valid scenarios through Result.Check
  "./sim/output FuzzReadDamaged"  # Arrow and Parquet readers on damaged files
  "./cmd/simtrain FuzzParseSizes"       # --sizes, --max-memory
  "./cmd/simtrain FuzzParseRankSet"     # --timeline-ranks, --trace-ranks
  "./cmd/simtrain FuzzParseCount"       # --tokens, --max-tasks
  "./cmd/simtrain FuzzParseShard"       # --shard
  "./cmd/simtrain FuzzParseConstraint"  # best --constraint
  "./cmd/simtrain FuzzBudgetFlags"      # --max-tasks with --max-memory
)
for t in "${targets[@]}"; do
  set -- $t
  echo "== fuzz $2 ($1, $FUZZTIME)"
  go test "$1" -run '^$' -fuzz "^$2\$" -fuzztime "$FUZZTIME"
done
