package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestSlurmScriptRunsEveryShard runs deploy/slurm/sweep.sbatch as Slurm
// would run a 3-task array (the SLURM_* variables it sets), with the real
// binary, and checks that the merged shards are the unsharded sweep. A rerun
// of one task (SHARDS set, as for --array=1) adds nothing.
func TestSlurmScriptRunsEveryShard(t *testing.T) {
	bin := buildBinary(t)
	sweep := writeSweep(t, smallSweep)
	out := filepath.Join(t.TempDir(), "shared")
	script, _ := filepath.Abs("../../deploy/slurm/sweep.sbatch")
	run := func(task int, env ...string) {
		cmd := exec.Command("bash", script)
		cmd.Env = append(os.Environ(), "SIMTRAIN="+bin, "SWEEP="+sweep, "OUT="+out,
			fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", task), "SLURM_CPUS_PER_TASK=2")
		cmd.Env = append(cmd.Env, env...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("task %d: %v\n%s", task, err, stderr.String())
		}
	}
	for task := 0; task < 3; task++ {
		run(task, "SLURM_ARRAY_TASK_COUNT=3")
	}
	run(1, "SHARDS=3", "SLURM_ARRAY_TASK_COUNT=1") // a rerun of task 1 alone
	files, _ := summaryFiles(out)
	if len(files) != 3 {
		t.Fatalf("shard files %v", files)
	}
	whole := t.TempDir()
	if _, _, err := runCLI(t, "sweep", sweep, "--out", whole, "--quiet"); err != nil {
		t.Fatal(err)
	}
	merged := filepath.Join(t.TempDir(), "m.arrow")
	if _, _, err := runCLI(t, "merge", out, "--out", merged); err != nil {
		t.Fatal(err)
	}
	sameRows(t, "slurm shards / unsharded", readRows(t, filepath.Join(whole, "summary.arrow")), readRows(t, merged))
	if err := exec.Command("bash", "-n", script).Run(); err != nil {
		t.Errorf("bash -n: %v", err)
	}
}

// TestK8sJobIsConsistent checks what a cluster would only find out at run
// time: the Job is Indexed, its completions equal the N of --shard, pods
// resume, restartPolicy suits backoffLimitPerIndex, the claim exists, and
// every flag it passes is a flag of simtrain sweep.
func TestK8sJobIsConsistent(t *testing.T) {
	data, err := os.ReadFile("../../deploy/k8s/sweep-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type container struct {
		Args         []string `yaml:"args"`
		VolumeMounts []struct {
			Name string `yaml:"name"`
		} `yaml:"volumeMounts"`
	}
	type object struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Spec struct {
			CompletionMode       string `yaml:"completionMode"`
			Completions          int    `yaml:"completions"`
			Parallelism          int    `yaml:"parallelism"`
			BackoffLimitPerIndex *int   `yaml:"backoffLimitPerIndex"`
			AccessModes          []string
			Template             struct {
				Spec struct {
					RestartPolicy string      `yaml:"restartPolicy"`
					Containers    []container `yaml:"containers"`
					Volumes       []struct {
						Name string `yaml:"name"`
						PVC  struct {
							ClaimName string `yaml:"claimName"`
						} `yaml:"persistentVolumeClaim"`
					} `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	byKind := map[string]object{}
	for {
		var o object
		if err := dec.Decode(&o); err != nil {
			break
		}
		byKind[o.Kind] = o
	}
	job, pvc := byKind["Job"], byKind["PersistentVolumeClaim"]
	if job.Spec.CompletionMode != "Indexed" || job.Spec.Completions < 1 || job.Spec.BackoffLimitPerIndex == nil ||
		job.Spec.Template.Spec.RestartPolicy != "Never" {
		t.Errorf("job spec %+v", job.Spec)
	}
	tmpl := job.Spec.Template.Spec
	if len(tmpl.Volumes) != 1 || tmpl.Volumes[0].PVC.ClaimName != pvc.Metadata.Name || len(tmpl.Containers) != 1 {
		t.Fatalf("volumes %+v, claim %q", tmpl.Volumes, pvc.Metadata.Name)
	}
	args := tmpl.Containers[0].Args
	if len(args) < 2 || args[0] != "sweep" {
		t.Fatalf("args %v", args)
	}
	if _, err := os.Stat(filepath.Join("../..", args[1])); err != nil {
		t.Errorf("sweep file %s is not in the repository (the image copies scenarios/): %v", args[1], err)
	}
	flags := newSweepCmd().Flags()
	shardN, resume := "", false
	for _, a := range args[2:] {
		name, val, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if flags.Lookup(name) == nil {
			t.Errorf("%s is not a flag of simtrain sweep", a)
		}
		switch name {
		case "shard":
			m := regexp.MustCompile(`^\$\(SHARD_INDEX\)/(\d+)$`).FindStringSubmatch(val)
			if m == nil {
				t.Errorf("--shard=%s: want $(SHARD_INDEX)/N", val)
			} else {
				shardN = m[1]
			}
		case "resume":
			resume = true
		}
	}
	if shardN != fmt.Sprint(job.Spec.Completions) || !resume {
		t.Errorf("--shard N %q against %d completions; --resume %v", shardN, job.Spec.Completions, resume)
	}
}
