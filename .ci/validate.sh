#!/usr/bin/env bash
# Accuracy gate for simtrain (issue 5): the published training runs under
# scenarios/validation must stay at least as well predicted as they are now.
# Called from .ci/run; runs in about four minutes on two cores (almost all of
# it the flow-fidelity pass over the multi-node runs).
#
#   ANALYTIC_MAX_MAPE  bar for every run at analytic fidelity, in percent:
#                      the MAPE achieved when it was last lowered (4.79%
#                      with round 8's repeated K/V heads, ring attention,
#                      selective layer checkpointing and unpad host stall;
#                      4.77% on 185 runs with round 9's DeepSeek-V3 and
#                      the FP8 parameter-gather fix; 4.79% with round 16's
#                      persistent-GEMM waves, the one time it was raised:
#                      0.14 points in-sample traded for both out-of-sample
#                      figures, which issue 16 ranks mechanisms by —
#                      leave-one-source-out 6.13 → 6.08%, holdout 12.10 →
#                      11.71% — while CV_MAX_MAPE came down from 7 to 6.2;
#                      4.75% with round 19's Megatron-LM interleaved
#                      README rows and its NaN-check host reads),
#                      rounded up slightly. Lower it when accuracy improves;
#                      never raise it to make a change pass.
#   MEMORY_MAX_MAPE    bar for the peak memory per GPU of the runs that
#                      publish it (expect.peak_memory_gib, torchtitan's
#                      documents): 8.35% when introduced (round 10), rounded
#                      up; 6.62% with the caching allocator's reserve and
#                      FSDP's fp32-only shard (round 13). Same rule: lower
#                      it, never raise it.
#   CV_MAX_MAPE        bar for the out-of-sample figure: leave-one-source-out
#                      (validate --cv source: each source group scored with
#                      the fitted-on-runs constants refit without it), the
#                      issue 16 bar of 7% at first (6.13% when introduced),
#                      6.2 since round 16's persistent-GEMM waves (6.08%),
#                      6.1 since round 19 (6.03%).
#                      Same ratchet: lower it, never raise it.
#   FLOW_SLACK         percentage points the flow-fidelity MAPE of the
#                      multi-node runs may exceed their analytic MAPE
#                      (flow must be at least as accurate; the slack only
#                      absorbs float noise between the two fidelities).
set -euo pipefail
cd "$(dirname "$0")/.."

ANALYTIC_MAX_MAPE=4.76
MEMORY_MAX_MAPE=6.7
CV_MAX_MAPE=6.1
FLOW_SLACK=0.25
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== validation scenarios are generated from the committed CSV"
go run ./tools/genvalidation -check

go build -o "$out/simtrain" ./cmd/simtrain

echo "== every published run, analytic fidelity (bars: MAPE <= ${ANALYTIC_MAX_MAPE}%, peak-memory MAPE <= ${MEMORY_MAX_MAPE}%, leave-one-source-out MAPE <= ${CV_MAX_MAPE}%)"
"$out/simtrain" validate scenarios/validation --out "$out/analytic" --max-mape "$ANALYTIC_MAX_MAPE" --max-memory-mape "$MEMORY_MAX_MAPE" \
  --cv source --max-cv-mape "$CV_MAX_MAPE"

# The committed calibration.yaml must be what calibrate fits on the same
# runs (20 s of CPU, 39 s wall on two loaded cores: ~1,900 simulations
# beyond the validation pass).
echo "== the fitted-on-runs constants are calibrate's output"
"$out/simtrain" calibrate scenarios/validation --check

# Multi-node runs: the generated files spell the node count as "  nodes: N".
mapfile -t multi < <(grep -L '^  nodes: 1$' scenarios/validation/r*.yaml)
echo "== ${#multi[@]} multi-node runs: flow fidelity must be at least as accurate as analytic"
# The summary object is the last JSON line; its keys are sorted, so its own
# "mape" directly follows the "groups" object (the per-group ones sit inside
# it, the peak-memory one inside "memory", after it).
mape() { tail -n 1 | grep -o '},"mape":[0-9.eE+-]*' | cut -d: -f2; }
a=$("$out/simtrain" validate "${multi[@]}" --format json --out "$out/multi-analytic" | mape)
bar=$(awk -v a="$a" -v s="$FLOW_SLACK" 'BEGIN { printf "%.4f", 100 * a + s }')
echo "analytic MAPE on the multi-node runs: $(awk -v a="$a" 'BEGIN { printf "%.2f%%", 100 * a }'); flow bar ${bar}%"
"$out/simtrain" validate "${multi[@]}" --fidelity flow --workers 2 --out "$out/multi-flow" --max-mape "$bar" | grep -E "scenarios, [0-9]+ simulated"

# The holdout (scenarios/holdout: published runs from sources nothing is
# fitted on): no bar, because nothing may be tuned to it; the figure is
# printed so that a change's effect on it is seen.
echo "== holdout report (no bar)"
"$out/simtrain" validate scenarios/holdout --out "$out/holdout" | grep -E "scenarios, [0-9]+ simulated"
