#!/usr/bin/env bash
# deploy/slurm/sweep.sbatch on a real Slurm cluster (issue 21). Called from
# .ci/run (which has run apt-get update). It
#   1. installs Debian's slurm-wlm and munge when they are missing;
#   2. starts a private single-node cluster in a temporary directory: munged
#      on its own socket and key, slurmctld and slurmd on ports 16817/16818
#      with a generated slurm.conf (no cgroups, no accounting), so nothing
#      of the machine's own configuration is used or changed;
#   3. submits the bundled 1,000-point Llama 3 70B sweep as a 4-task job
#      array with the script as documented in docs/scale-out.md, and the
#      merge as a job that depends on it (afterok);
#   4. runs the same sweep unsharded and checks (TestSlurmArrayOutputs) that
#      every point is in exactly one shard and the merge equals the
#      unsharded sweep;
#   5. stops the daemons it started (by their pid files) however it ends.
# Without apt-get (not a Debian-like machine) it says so and skips.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  if ! command -v apt-get >/dev/null; then
    echo "SKIP: Slurm test: slurm-wlm and munge are not installed and apt-get is not available to install them"
    exit 0
  fi
  echo "== installing slurm-wlm and munge (Debian packages)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null
fi

w=$(mktemp -d)
chmod 755 "$w"
# kill_daemons stops the named daemons started here (by their pid files).
kill_daemons() {
  for p in "$@"; do
    if [[ -f $w/$p.pid ]]; then kill "$(cat "$w/$p.pid")" 2>/dev/null || true; fi
  done
}
stop() {
  kill_daemons slurmd slurmctld munged
  sleep 1
  rm -rf "$w"
}
trap stop EXIT

# munge: a fresh key, its own socket (munged refuses root without --force).
head -c 1024 /dev/urandom > "$w/munge.key"
chmod 600 "$w/munge.key"
munged --force --socket="$w/munge.sock" --key-file="$w/munge.key" --log-file="$w/munged.log" \
  --pid-file="$w/munged.pid" --seed-file="$w/munged.seed"

host=$(hostname -s)
mkdir -p "$w/state" "$w/spool" "$w/log" "$w/shared"
cat > "$w/slurm.conf" <<EOF
ClusterName=simtrainci
SlurmctldHost=${host}(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
AuthInfo=socket=$w/munge.sock
CredType=cred/munge
StateSaveLocation=$w/state
SlurmdSpoolDir=$w/spool
SlurmctldPidFile=$w/slurmctld.pid
SlurmdPidFile=$w/slurmd.pid
SlurmctldLogFile=$w/log/slurmctld.log
SlurmdLogFile=$w/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
MinJobAge=600
NodeName=ci NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=2000 State=UNKNOWN
PartitionName=ci Nodes=ci Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$w/slurm.conf
# up waits up to $1 seconds for the node to report idle.
up() {
  for _ in $(seq "$1"); do
    sinfo -h -o %t 2>/dev/null | grep -q idle && return 0
    sleep 1
  done
  return 1
}
# start_daemons starts the controller and the node daemon.
start_daemons() {
  slurmctld -i
  slurmd -N ci
}
# show_logs prints the daemons' last log lines.
show_logs() {
  tail -n 20 "$w/log/slurmctld.log" "$w/log/slurmd.log" >&2 || true
}
start_daemons
# Once in a while (seen once in CI, 2026-12-05) the controller is still
# unreachable after 30 s; the daemons are then started once more before
# the test fails, with their logs.
if ! up 45; then
  echo "the Slurm node is not up after 45 s; restarting its daemons" >&2
  show_logs
  kill_daemons slurmd slurmctld
  sleep 2
  start_daemons
  if ! up 45; then
    echo "FAIL: the Slurm node did not come up" >&2
    show_logs
    exit 1
  fi
fi
sinfo

go build -o "$w/simtrain" ./cmd/simtrain
sweep=scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml
start=$(date +%s)
# The array as docs/scale-out.md submits it, with this node's sizes: the
# script asks for 8 CPUs and 1 GB per CPU per task, more than a CI machine has.
job=$(sbatch --parsable --array=0-3 --cpus-per-task=1 --mem-per-cpu=100M --time=10 \
  --output="$w/log/task-%A_%a.out" --chdir="$PWD" \
  --export=ALL,SIMTRAIN="$w/simtrain",SWEEP="$sweep",OUT="$w/shared" deploy/slurm/sweep.sbatch)
# The merge, chained as docs/scale-out.md shows; --wait returns when it ends.
sbatch --wait --parsable --dependency=afterok:"$job" --cpus-per-task=1 --mem-per-cpu=100M --time=10 \
  --output="$w/log/merge-%j.out" --chdir="$PWD" \
  --wrap "$w/simtrain merge $w/shared --out $w/merged.parquet" >/dev/null || {
  echo "FAIL: the merge job did not complete" >&2
  scontrol show job >&2 || true
  cat "$w"/log/*.out >&2 || true
  exit 1
}
echo "array job $job: 4 tasks and the merge done in $(( $(date +%s) - start )) s"
scontrol show job | grep -E 'JobState' | sort | uniq -c
cat "$w"/log/merge-*.out
if scontrol show job | grep -E 'JobState=' | grep -qv 'JobState=COMPLETED'; then
  echo "FAIL: a job did not complete" >&2
  cat "$w"/log/*.out >&2
  exit 1
fi

"$w/simtrain" sweep "$sweep" --out "$w/whole" --quiet
SLURM_CHECK_SHARDS="$w/shared" SLURM_CHECK_WHOLE="$w/whole" SLURM_CHECK_MERGED="$w/merged.parquet" \
  go test ./cmd/simtrain -run '^TestSlurmArrayOutputs$' -count=1 -v | grep -E '^(---|ok|FAIL|PASS)|exactly once|differs'
