package goodput

// Unit is what a component's failure rate scales with.
type Unit uint8

const (
	PerGPU  Unit = iota // each GPU of the job (and each rank's process)
	PerNIC              // each scale-out NIC port and the cable and switch port behind it
	PerNode             // each host
)

func (u Unit) String() string { return [...]string{"GPU", "NIC", "node"}[u] }

// Class is a component class whose failures interrupt the job.
type Class struct {
	Name string
	Unit Unit
	// NodeOut says the failure takes a node out of the job until it is
	// repaired, so the restart needs a spare (hardware in the host);
	// software and fabric failures restart on the same nodes.
	NodeOut bool
	// Table5 lists the rows of Llama 3's Table 5 (arXiv:2407.21783) the
	// class gathers, for the record.
	Table5 string
	// Table5Count is their interruptions in the 54-day snapshot.
	Table5Count int
}

// Classes are the component classes, in a fixed order (outputs follow it).
// Their Table 5 counts sum to the 419 unexpected interruptions.
var Classes = []Class{
	{"gpu", PerGPU, true, "faulty GPU 148, GPU SRAM memory 19, GPU system processor 17, silent data corruption 6, GPU thermal interface + sensor 6", 196},
	{"hbm", PerGPU, true, "GPU HBM3 memory 72", 72},
	{"software", PerGPU, false, "software bug 54, dependency 2, NCCL watchdog timeouts 7 (cause unknown)", 63},
	{"network", PerNIC, false, "network switch/cable 35", 35},
	{"nic", PerNIC, true, "NIC 7", 7},
	{"host", PerNode, true, "host maintenance (unplanned) 32, SSD 3, power supply 3, server chassis 2, IO expansion board 2, CPU 2, system memory 2", 46},
}

// ClassNames lists the class names in order.
func ClassNames() []string {
	out := make([]string, len(Classes))
	for i, c := range Classes {
		out[i] = c.Name
	}
	return out
}

// Llama 3's 405B pre-training snapshot (arXiv:2407.21783 §3.3.4, Table 5):
// 54 days on 16,384 H100 in 2,048 Grand Teton nodes, one 400 Gb/s RoCE NIC
// per GPU (hardware-facts §6b), 419 unexpected and 47 planned interruptions.
const (
	Llama3Days        = 54
	Llama3GPUs        = 16384
	Llama3Nodes       = 2048
	Llama3NICs        = 16384
	Llama3Unexpected  = 419
	Llama3Planned     = 47
	llama3Hours       = Llama3Days * 24.0
	llama3NodeHourly  = Llama3Unexpected / (Llama3Nodes * llama3Hours) // 1.579e-4 per node-hour
	rscRSC1PerNodeDay = 6.50e-3                                        // Kokolis et al. (arXiv:2410.21680): RSC-1, 16k A100
	rscRSC2PerNodeDay = 2.34e-3                                        // same study: RSC-2, 8k A100
)

// RateSet is a named set of failure rates, one per class, in failures per
// unit-hour of the class's unit.
type RateSet struct {
	Name    string
	Source  string
	PerHour [6]float64 // indexed like Classes
	// InSample says the set was fitted on Llama 3's Table 5, so checking it
	// against Table 5 is a consistency check, not a prediction.
	InSample bool
}

// llama3Rates divides each class's Table 5 count by its unit-hours in the
// 54-day snapshot.
func llama3Rates() (r [6]float64) {
	for i, c := range Classes {
		units := map[Unit]float64{PerGPU: Llama3GPUs, PerNIC: Llama3NICs, PerNode: Llama3Nodes}[c.Unit]
		r[i] = float64(c.Table5Count) / (units * llama3Hours)
	}
	return r
}

// rscRates takes the job failure rate per node from Meta's study of two
// A100 research clusters (Kokolis et al. 2025: r_f = 6.50 and 2.34 failures
// per 1,000 node-days for RSC-1 and RSC-2) — the two clusters weighted
// equally, since they differ 2.8-fold and each is one sample of a cluster's
// rate — and splits it over the classes in Table 5's proportions, per node
// of 8 GPUs and 8 NICs. The total is independent of Llama 3; the split is
// not (docs/goodput.md).
func rscRates() (r [6]float64) {
	perNodeHour := (rscRSC1PerNodeDay + rscRSC2PerNodeDay) / 2 / 24
	scale := perNodeHour / llama3NodeHourly
	l := llama3Rates()
	for i := range r {
		r[i] = l[i] * scale
	}
	return r
}

// DefaultRateSet is the set used when the scenario names none: the
// independent one.
const DefaultRateSet = "meta-rsc"

var rateSets = []RateSet{
	{Name: "meta-rsc", PerHour: rscRates(),
		Source: "Kokolis et al. (HPCA'25, arXiv:2410.21680): mean of RSC-1's 6.50 and RSC-2's 2.34 job failures per 1,000 node-days (A100), split over components in Llama 3 Table 5's proportions"},
	{Name: "llama3-table5", PerHour: llama3Rates(), InSample: true,
		Source: "Llama 3 (arXiv:2407.21783) Table 5: 419 unexpected interruptions in 54 days on 16,384 H100, per component-hour"},
}

// RateSetNames lists the rate sets.
func RateSetNames() []string {
	out := make([]string, len(rateSets))
	for i, s := range rateSets {
		out[i] = s.Name
	}
	return out
}

// RateSetByName returns the named set, nil if there is none.
func RateSetByName(name string) *RateSet {
	for i := range rateSets {
		if rateSets[i].Name == name {
			return &rateSets[i]
		}
	}
	return nil
}
