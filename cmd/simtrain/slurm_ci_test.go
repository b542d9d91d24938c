package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
)

// TestSlurmArrayOutputs checks what .ci/slurm.sh left after running
// deploy/slurm/sweep.sbatch as a job array on a real Slurm cluster and
// merging its shards in a dependent job: every point of the sweep is in
// exactly one shard file, and the merged table equals the sweep run in one
// process (apart from the wall-clock column). It runs only when the
// script sets SLURM_CHECK_SHARDS (the array's OUT), SLURM_CHECK_WHOLE (the
// unsharded sweep's directory) and SLURM_CHECK_MERGED (the merged file).
func TestSlurmArrayOutputs(t *testing.T) {
	shards, whole, merged := os.Getenv("SLURM_CHECK_SHARDS"), os.Getenv("SLURM_CHECK_WHOLE"), os.Getenv("SLURM_CHECK_MERGED")
	if shards == "" || whole == "" || merged == "" {
		t.Skip("set by .ci/slurm.sh after a real Slurm job array")
	}
	files, err := summaryFiles(shards)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("%d shard files in %s, want the array's", len(files), shards)
	}
	seen := map[string]string{}
	n := 0
	for _, f := range files {
		var rows []output.SummaryRow
		if _, err := output.ReadTable(f, &rows); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if prev, dup := seen[r.RunID]; dup {
				t.Errorf("point %s (run id %s) is in %s and %s", r.Name, r.RunID, filepath.Base(prev), filepath.Base(f))
			}
			seen[r.RunID] = f
			n++
		}
	}
	ref := readRows(t, filepath.Join(whole, "summary.arrow"))
	if n != len(ref) {
		t.Errorf("the shards hold %d rows, the unsharded sweep %d", n, len(ref))
	}
	sameRows(t, "Slurm array merged / unsharded", ref, readRows(t, merged))
	t.Logf("%d points in %d shard files, each exactly once; merged = unsharded", n, len(files))
}
