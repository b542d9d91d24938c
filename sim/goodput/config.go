package goodput

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Config is the scenario's optional goodput block (docs/scenario-format.md,
// "goodput"): which failure rates apply, how a failed job is brought back,
// and how it checkpoints. Resolve fills every default, so two files that
// configure the same run have the same canonical JSON. A field left nil is
// "use the default"; Resolve sets it.
type Config struct {
	// FailureRates names the per-component failure-rate set (RateSetNames):
	// meta-rsc (default; Kokolis et al. 2025, independent of Llama 3) or
	// llama3-table5 (Llama 3's Table 5 over its 54 days).
	FailureRates string `yaml:"failure_rates" json:"failure_rates"`
	// FailuresPerHour overrides single classes of the set, in failures per
	// unit-hour of the class's unit (ClassNames; e.g. gpu: per GPU-hour).
	// Each class is its own field, so a sweep can vary it
	// (goodput.failures_per_hour.gpu).
	FailuresPerHour *ClassRates `yaml:"failures_per_hour" json:"failures_per_hour,omitempty"`
	// PlannedPerDay is the rate of planned maintenance stops (firmware,
	// kernel upgrades) requested per day.
	PlannedPerDay *float64 `yaml:"planned_per_day" json:"planned_per_day"`
	// DetectS is the time from a failure to the job being declared failed.
	DetectS *float64 `yaml:"detect_s" json:"detect_s"`
	// RelaunchS is scheduling, node replacement and process start-up of a
	// restart, before the communicators are built and the checkpoint loads.
	RelaunchS *float64 `yaml:"relaunch_s" json:"relaunch_s"`
	// CommInitMsPerGPU is the communicator bring-up per GPU of the job
	// (an O(n) rendezvous), in milliseconds.
	CommInitMsPerGPU *float64 `yaml:"comm_init_ms_per_gpu" json:"comm_init_ms_per_gpu"`
	// SpareNodes is the hot-spare pool; nil sizes it to the 99th percentile
	// of the nodes under repair.
	SpareNodes *int `yaml:"spare_nodes" json:"spare_nodes,omitempty"`
	// NodeRepairH is the mean time a failed node is out for repair.
	NodeRepairH *float64 `yaml:"node_repair_h" json:"node_repair_h"`

	Checkpoint CheckpointConfig `yaml:"checkpoint" json:"checkpoint"`
}

// CheckpointConfig is the goodput.checkpoint block.
type CheckpointConfig struct {
	// Format is sharded (every rank writes its share of the model state,
	// each byte once: PyTorch DCP, Megatron dist_ckpt; default) or full (one
	// consolidated file through one node).
	Format string `yaml:"format" json:"format"`
	// Mode is sync (the step waits for the write) or async (the step waits
	// only for a snapshot to host memory; the write runs behind training).
	Mode string `yaml:"mode" json:"mode"`
	// Interval is daly (default), young, or a number of seconds of training
	// between checkpoints; it is rounded to whole steps.
	Interval string `yaml:"interval" json:"interval"`
	// NodeGBs is one node's storage bandwidth in GB/s (10^9 bytes/s).
	NodeGBs *float64 `yaml:"node_gb_s" json:"node_gb_s"`
	// StorageWriteGBs and StorageReadGBs are the storage system's aggregate
	// sustained write and read bandwidths in GB/s.
	StorageWriteGBs *float64 `yaml:"storage_write_gb_s" json:"storage_write_gb_s"`
	StorageReadGBs  *float64 `yaml:"storage_read_gb_s" json:"storage_read_gb_s"`
}

// Defaults, each with its source (docs/goodput.md discusses them).
const (
	// DefaultPlannedPerDay: Llama 3's 405B pre-training saw 47 planned
	// interruptions in a 54-day snapshot (arXiv:2407.21783 §3.3.4,
	// Table 5 caption); "automated cluster maintenance such as firmware
	// and Linux kernel upgrades ... led to at least one training
	// interruption daily".
	DefaultPlannedPerDay = 47.0 / 54.0
	// DefaultDetectS: Meta's research clusters run health checks every 5
	// minutes (Kokolis et al., HPCA'25, arXiv:2410.21680); a failure waits on
	// average half a period to be found. PyTorch's NCCL watchdog (10
	// minutes by default) bounds the hangs the checks miss.
	DefaultDetectS = 150.0
	// DefaultRelaunchS: Crusoe's AutoClusters "detects and replaces failed
	// GPU nodes in under 5 minutes" (crusoe.ai blog, AutoClusters); the
	// 5 minutes are taken for replacement and relaunch.
	DefaultRelaunchS = 300.0
	// DefaultCommInitMsPerGPU: MegaScale builds the communicators of
	// 2,048 GPUs in under 5 s and of more than 10,000 GPUs in under 30 s
	// once the global barrier is O(n) (Jiang et al., NSDI'24,
	// arXiv:2402.15627); at its 12,288-GPU scale that is 30 s / 12,288 =
	// 2.44 ms per GPU.
	// PyTorch's stock TCPStore barrier took 1,047 s at 2,048 GPUs.
	DefaultCommInitMsPerGPU = 30e3 / 12288
	// DefaultNodeRepairH: the node recovery time Cui et al. use for
	// NCSA Delta's A100/H100 nodes in their overprovisioning projection
	// (SC'25, arXiv:2503.11901).
	DefaultNodeRepairH = 2.2
	// DefaultNodeGBs: a Grand Teton node (Llama 3's cluster) has two 400 Gb/s
	// front-end NICs, one per CPU (Meta's 24K-GPU cluster blog, via
	// glennklockwood.com/garden/systems/meta's-h100-clusters): 100 GB/s.
	DefaultNodeGBs = 100.0
	// DefaultStorageGBs: Llama 3's Tectonic storage "supports 2 TB/s
	// sustainable throughput and peak 7 TB/s" (arXiv:2407.21783 §3.3.1);
	// the sustained figure is taken for writes and reads.
	DefaultStorageGBs = 2000.0
	// SparePercentile sizes the default spare pool: ByteRobust keeps warm
	// standbys at the 99th percentile of the failures it expects
	// (ByteRobust, SOSP'25, arXiv:2509.16293).
	SparePercentile = 0.99
)

// Format, mode and interval names.
var (
	FormatNames   = []string{"sharded", "full"}
	ModeNames     = []string{"sync", "async"}
	IntervalRules = []string{"daly", "young"}
)

func fptr(v float64) *float64 { return &v }

// ClassRates overrides the rate set's per-class failure rates, in failures
// per unit-hour of the class's unit (Classes); nil fields keep the set's.
// Fields are in the alphabetical order of their keys, so the canonical JSON
// is the one the earlier map wrote.
type ClassRates struct {
	GPU      *float64 `yaml:"gpu" json:"gpu,omitempty"`
	HBM      *float64 `yaml:"hbm" json:"hbm,omitempty"`
	Host     *float64 `yaml:"host" json:"host,omitempty"`
	Network  *float64 `yaml:"network" json:"network,omitempty"`
	NIC      *float64 `yaml:"nic" json:"nic,omitempty"`
	Software *float64 `yaml:"software" json:"software,omitempty"`
}

// field is the override of class name (a ClassNames entry), nil for
// another name.
func (r *ClassRates) field(name string) **float64 {
	switch name {
	case "gpu":
		return &r.GPU
	case "hbm":
		return &r.HBM
	case "host":
		return &r.Host
	case "network":
		return &r.Network
	case "nic":
		return &r.NIC
	case "software":
		return &r.Software
	}
	return nil
}

// Rate is class name's override, nil when unset (or r is nil).
func (r *ClassRates) Rate(name string) *float64 {
	if r == nil {
		return nil
	}
	if f := r.field(name); f != nil {
		return *f
	}
	return nil
}

// Set overrides class name's rate; it reports false for an unknown class.
func (r *ClassRates) Set(name string, v float64) bool {
	f := r.field(name)
	if f != nil {
		*f = &v
	}
	return f != nil
}

// Resolve fills the defaults and checks every field. Errors name the field
// as goodput.<path> and list the valid choices.
func (c *Config) Resolve() error {
	if c.FailureRates == "" {
		c.FailureRates = DefaultRateSet
	}
	if RateSetByName(c.FailureRates) == nil {
		return fmt.Errorf("goodput.failure_rates: unknown set %q (valid: %s)", c.FailureRates, strings.Join(RateSetNames(), ", "))
	}
	for _, k := range ClassNames() {
		if v := c.FailuresPerHour.Rate(k); v != nil && (!(*v >= 0) || math.IsInf(*v, 0)) {
			return fmt.Errorf("goodput.failures_per_hour.%s: must be a finite number >= 0, got %v", k, *v)
		}
	}
	for _, f := range []struct {
		name string
		v    **float64
		def  float64
		pos  bool // must be > 0, not only >= 0
	}{
		{"planned_per_day", &c.PlannedPerDay, DefaultPlannedPerDay, false},
		{"detect_s", &c.DetectS, DefaultDetectS, false},
		{"relaunch_s", &c.RelaunchS, DefaultRelaunchS, false},
		{"comm_init_ms_per_gpu", &c.CommInitMsPerGPU, DefaultCommInitMsPerGPU, false},
		{"node_repair_h", &c.NodeRepairH, DefaultNodeRepairH, true},
		{"checkpoint.node_gb_s", &c.Checkpoint.NodeGBs, DefaultNodeGBs, true},
		{"checkpoint.storage_write_gb_s", &c.Checkpoint.StorageWriteGBs, DefaultStorageGBs, true},
		{"checkpoint.storage_read_gb_s", &c.Checkpoint.StorageReadGBs, DefaultStorageGBs, true},
	} {
		if *f.v == nil {
			*f.v = fptr(f.def)
		}
		v := **f.v
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
			return fmt.Errorf("goodput.%s: must be a finite number >= 0, got %v", f.name, v)
		case f.pos && v == 0:
			return fmt.Errorf("goodput.%s: must be > 0", f.name)
		}
	}
	if c.SpareNodes != nil && *c.SpareNodes < 0 {
		return fmt.Errorf("goodput.spare_nodes: must be >= 0, got %d (leave it out to size the pool automatically)", *c.SpareNodes)
	}
	ck := &c.Checkpoint
	if ck.Format == "" {
		ck.Format = "sharded"
	}
	if !slices.Contains(FormatNames, ck.Format) {
		return fmt.Errorf("goodput.checkpoint.format: unknown value %q (valid: %s)", ck.Format, strings.Join(FormatNames, ", "))
	}
	if ck.Mode == "" {
		ck.Mode = "sync"
	}
	if !slices.Contains(ModeNames, ck.Mode) {
		return fmt.Errorf("goodput.checkpoint.mode: unknown value %q (valid: %s)", ck.Mode, strings.Join(ModeNames, ", "))
	}
	if ck.Interval == "" {
		ck.Interval = "daly"
	}
	if _, _, err := ck.interval(); err != nil {
		return err
	}
	return nil
}

// interval parses Interval: a rule name, or seconds (> 0).
func (ck *CheckpointConfig) interval() (rule string, seconds float64, err error) {
	if slices.Contains(IntervalRules, ck.Interval) {
		return ck.Interval, 0, nil
	}
	v, perr := strconv.ParseFloat(ck.Interval, 64)
	if perr != nil || !(v > 0) || v > maxIntervalS {
		return "", 0, fmt.Errorf("goodput.checkpoint.interval: %q is neither a rule (%s) nor a number of seconds in (0, 1e9]", ck.Interval, strings.Join(IntervalRules, ", "))
	}
	return "", v, nil
}

// Defaults returns a resolved Config with every default, for scenarios
// without a goodput block.
func Defaults() *Config {
	c := &Config{}
	if err := c.Resolve(); err != nil {
		panic(err) // the defaults are valid; a test holds it
	}
	return c
}

// maxIntervalS bounds a given checkpoint interval (about 32 years).
const maxIntervalS = 1e9

var errNoSteps = errors.New("goodput: the step simulation gave no step time")
