package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/output/numfmt"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
)

// collectiveRow is one size of a collective sweep; its JSON form is the
// --format json line.
type collectiveRow struct {
	Op        string  `json:"op"`
	SizeBytes int64   `json:"size_bytes"`
	TimeUS    float64 `json:"time_us"`
	AlgBW     float64 `json:"algbw_gbps"`
	BusBW     float64 `json:"busbw_gbps"`
	Algo      string  `json:"algo"`
	Ranks     int     `json:"ranks"`
	proto     string
}

func newCollectiveCmd() *cobra.Command {
	var (
		spec                      topology.Spec
		ranks                     int
		opName, algoName, sizeArg string
		fidName, format           string
		budget                    budgetFlags
	)
	cmd := &cobra.Command{
		Use:   "collective",
		Short: "Predict one collective's time and bandwidth over a range of sizes, like nccl-tests",
		Long: `collective builds a cluster, takes its first --ranks GPUs (default: all) as one
group and prints, for every size, the time of one collective and its algbw and
busbw in nccl-tests' definitions (algbw = size / time; busbw = algbw x
2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and
all_to_all, 1 otherwise; GB/s = 1e9 B/s), with the algorithm and NCCL protocol
used. Sizes follow nccl-tests: the buffer for all_reduce, broadcast and reduce,
the full output of all_gather, the full input of reduce_scatter, the full send
buffer of all_to_all, the bytes each rank sends for send_recv and send
(rank 0 to rank 1).

--sizes takes sizes and ranges separated by commas; a range A:B doubles from A
up to B. Units are binary: 1K = 1024 bytes, M, G, T.

--algo auto picks the fastest algorithm and protocol as NCCL's tuner does;
ring, tree, nvls (NVLink SHARP; across nodes NVLS+tree), hierarchical
(intra-node reduce-scatter, inter-node per rail, intra-node all-gather) and
direct (all_to_all, send_recv, send) force one. --fidelity flow plays the
collective's transfers on the simulated fabric instead of the closed form.`,
		Example: `  simtrain collective --gpu h100-sxm --nodes 1 --op all_reduce --sizes 1K:8G
  simtrain collective --gpu a100-80gb --nodes 4 --nic ib-hdr-200 --op all_reduce --algo ring --sizes 1M,64M,1G
  simtrain collective --gpu h100-sxm --nodes 2 --op all_to_all --sizes 64M --fidelity flow --format json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkClusterFlags(spec); err != nil {
				return err
			}
			op, err := collectives.ParseOp(opName)
			if err != nil {
				return usageErrorf("--op: %v", err)
			}
			algo, err := collectives.ParseAlgo(algoName)
			if err != nil {
				return usageErrorf("--algo: %v", err)
			}
			fid, err := network.ParseFidelity(fidName)
			if err != nil {
				return usageErrorf("--fidelity: %v", err)
			}
			if err := checkChoice("format", format, "table", "json"); err != nil {
				return err
			}
			sizes, err := parseSizes(sizeArg)
			if err != nil {
				return usageErrorf("--sizes: %v", err)
			}
			c, err := topology.Build(spec)
			if err != nil {
				return specUsageError(err)
			}
			n := c.NumGPUs()
			switch {
			case ranks < 0 || ranks > n:
				return usageErrorf("--ranks: %d is not a group of this cluster's %d GPUs (valid: 1..%d, 0 for all)", ranks, n, n)
			case ranks == 0:
				ranks = n
			}
			if op == collectives.Send && ranks < 2 {
				return usageErrorf("--ranks: send needs 2 ranks (valid: 2..%d, 0 for all)", n)
			}
			members := make([]int, ranks)
			for i := range members {
				members[i] = i
			}
			g, err := collectives.NewGroup(c, members)
			if err != nil {
				return err
			}
			if _, err := g.Cost(op, algo, units.Bytes(sizes[0])); err != nil {
				return usageErrorf("--algo: %s", strings.TrimPrefix(err.Error(), "collectives: "))
			}
			if err := budget.check(); err != nil {
				return err
			}
			if fid == network.Flow {
				if err := checkFlowBudget(g, op, algo, sizes, c.NumGPUs(), spec, budget.budget()); err != nil {
					return err
				}
			}
			rows := make([]collectiveRow, 0, len(sizes))
			for _, size := range sizes {
				row, err := collectiveRun(c, g, op, algo, fid, size)
				if err != nil {
					return err
				}
				rows = append(rows, row)
			}
			if err := checkFinite(rows); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if format == "json" {
				for _, r := range rows {
					if err := writeJSONLine(w, r); err != nil {
						return err
					}
				}
				return nil
			}
			return writeCollectiveTable(w, c, op, algo, fid, ranks, rows)
		},
	}
	f := cmd.Flags()
	addClusterFlags(f, &spec, false)
	f.IntVar(&ranks, "ranks", 0, "group size: the first N GPUs in node-major order (0: all)")
	f.StringVar(&opName, "op", "all_reduce", strings.Join(collectives.OpNames(), " | "))
	f.StringVar(&algoName, "algo", "auto", strings.Join(collectives.AlgoNames(), " | "))
	f.StringVar(&sizeArg, "sizes", "1K:8G", "sizes in bytes: a list (1M,64M,1G) and/or ranges doubling from A to B (1K:8G); 1K = 1024")
	f.StringVar(&fidName, "fidelity", "analytic", "analytic (closed form) | flow (transfers on the fabric)")
	f.StringVar(&format, "format", "table", "table | json (one object per size)")
	budget.add(cmd)
	return cmd
}

// bytesPerFlow is the memory of one transfer on the flow-level fabric
// (flow record, route, link membership): all_to_all on 64, 128 and 256
// H100 nodes (35.8k, 137k and 537k transfers) peaked at 62, 124 and 386 MB
// (/usr/bin/time), about 650 bytes per transfer; rounded up for headroom.
const bytesPerFlow = 1024

// flowRankNs is the simulation time per transfer and rank of the group at
// flow fidelity: each finished transfer re-solves the max-min shares of the
// links it crossed, which an all-to-all loads with O(ranks) transfers. The
// same runs took 7.6 s and 52 s for 137k transfers on 1,024 ranks and 537k
// on 2,048: 47 to 54 ns per transfer × rank. One unit of --max-tasks is
// about 1 µs of simulation (simulation.Budget), so a transfer costs ranks/20 units.
const flowRankNs = 50

// checkFlowBudget refuses, before any flow starts, a flow-fidelity sweep
// whose transfers (collectives.Group.Transfers) would take longer or more
// memory than the budget.
func checkFlowBudget(g *collectives.Group, op collectives.Op, algo collectives.Algo, sizes []int64, gpus int, spec topology.Spec, b simulation.Budget) error {
	var transfers, peak float64
	for _, size := range sizes {
		n, err := g.Transfers(op, algo, float64(size))
		if err != nil {
			return usageErrorf("--algo: %s", strings.TrimPrefix(err.Error(), "collectives: "))
		}
		transfers += float64(n)
		peak = max(peak, float64(n))
	}
	units := transfers * max(1, float64(g.Size())*flowRankNs/1000)
	maxTasks, maxMem := b.MaxTasks, b.MaxMemoryBytes
	if maxTasks == 0 {
		maxTasks = simulation.DefaultMaxTasks
	}
	if maxMem == 0 {
		maxMem = simulation.DefaultMaxMemoryBytes
	}
	drivers := fmt.Sprintf("--op %s on %d ranks (--nodes %d × %d GPUs) and %d sizes", op, g.Size(), spec.Nodes, gpus/max(spec.Nodes, 1), len(sizes))
	mem := peak*bytesPerFlow + 64<<20
	switch {
	case mem > float64(maxMem):
		return fmt.Errorf("%w: about %.3g GiB for %.3g concurrent transfers at flow fidelity, more than --max-memory %.3g GiB; they grow with %s (use --fidelity analytic or fewer ranks, or raise --max-memory)",
			simulation.ErrBudget, mem/(1<<30), peak, float64(maxMem)/(1<<30), drivers)
	case units > float64(maxTasks):
		return fmt.Errorf("%w: %.3g transfers at flow fidelity, about %.3g task units (%.3g s per transfer and rank), more than --max-tasks %.3g; they grow with %s (use --fidelity analytic, fewer ranks or sizes, or raise --max-tasks)",
			simulation.ErrBudget, transfers, units, flowRankNs*1e-9, float64(maxTasks), drivers)
	}
	return nil
}

// collectiveRun prices one size: the closed form, or at flow fidelity the
// runner's transfers on a fresh fabric.
func collectiveRun(c *topology.Cluster, g *collectives.Group, op collectives.Op, algo collectives.Algo, fid network.Fidelity, size int64) (collectiveRow, error) {
	bytes := float64(size)
	cost, err := g.Cost(op, algo, units.Bytes(bytes))
	if err != nil {
		return collectiveRow{}, usageErrorf("--algo: %s", strings.TrimPrefix(err.Error(), "collectives: "))
	}
	t := cost.Time
	if fid == network.Flow {
		e := engine.New()
		fab := network.New(e, c.Bandwidths(), c.Latencies(), network.Flow)
		r := collectives.NewRunner(e, fab, network.Flow, c)
		var d doneAt
		if err := r.Start(g, op, algo, units.Bytes(bytes), &d, 0); err != nil {
			return collectiveRow{}, err
		}
		e.Run()
		if !d.done {
			return collectiveRow{}, fmt.Errorf("%s of %d bytes did not complete on the fabric", op, size)
		}
		t = d.at
	}
	row := collectiveRow{Op: op.String(), SizeBytes: size, TimeUS: float64(t) / 1e3, Algo: cost.Algo.String(),
		Ranks: g.Size(), proto: cost.Proto.String()}
	if t > 0 {
		row.AlgBW = bytes / t.Seconds() / 1e9
		row.BusBW = row.AlgBW * collectives.BusFactor(op, g.Size())
	}
	return row, nil
}

// doneAt records when a collective finished.
type doneAt struct {
	at   engine.Time
	done bool
}

func (d *doneAt) CollectiveDone(now engine.Time, _ int64) { d.at, d.done = now, true }

// writeCollectiveTable prints an nccl-tests-style table.
func writeCollectiveTable(w io.Writer, c *topology.Cluster, op collectives.Op, algo collectives.Algo, fid network.Fidelity, ranks int, rows []collectiveRow) error {
	nodes := fmt.Sprintf("%d node", c.Nodes())
	if c.Nodes() != 1 {
		nodes += "s"
	}
	if _, err := fmt.Fprintf(w, "# %s on %d ranks of %s x %d %s (%s, %s), algo %s, fidelity %s\n",
		op, ranks, nodes, c.GPUsPerNode(), c.GPU.Name, c.NIC.Name, c.Spec.Network, algo, fid); err != nil {
		return err
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "size (B)\ttime (us)\talgbw (GB/s)\tbusbw (GB/s)\talgo\tproto\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", numfmt.Grouped(float64(r.SizeBytes)), numfmt.Fixed(r.TimeUS, 2),
			numfmt.Fixed(r.AlgBW, 2), numfmt.Fixed(r.BusBW, 2), r.Algo, r.proto)
	}
	return tw.Flush()
}

// maxSize bounds one size (1 PiB) and maxSizes the number of sizes.
const (
	maxSize  = int64(1) << 50
	maxSizes = 1000
)

// parseSizes parses a comma-separated list of sizes and A:B ranges that
// double from A while <= B. Errors are one line without the flag name.
func parseSizes(s string) ([]int64, error) {
	var out []int64
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		lo, hi, isRange := strings.Cut(item, ":")
		a, err := parseSize(lo)
		if err != nil {
			return nil, err
		}
		if !isRange {
			out = append(out, a)
			continue
		}
		b, err := parseSize(hi)
		if err != nil {
			return nil, err
		}
		if b < a {
			return nil, fmt.Errorf("range %q ends below its start", clipFlag(item))
		}
		for x := a; x <= b; x *= 2 {
			out = append(out, x)
			if x > b/2 {
				break
			}
		}
	}
	if len(out) > maxSizes {
		return nil, fmt.Errorf("%d sizes, at most %d", len(out), maxSizes)
	}
	return out, nil
}

// parseSize parses a byte count with an optional binary unit K, M, G, T (an
// optional trailing B or iB is accepted: 4K, 4KB, 4KiB, 4096).
func parseSize(s string) (int64, error) {
	orig := s
	if s == "" {
		return 0, fmt.Errorf("empty size (valid: a positive byte count such as 4096, 4K, 1M, 8G)")
	}
	u := strings.ToUpper(s)
	switch {
	case strings.HasSuffix(u, "IB"): // 4KiB
		u = u[:len(u)-2]
	case strings.HasSuffix(u, "B"): // 4KB, 4096B
		u = u[:len(u)-1]
	}
	mult := 1.0
	if n := len(u); n > 0 {
		switch u[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			u = u[:n-1]
		}
	}
	v, err := strconv.ParseFloat(u, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("bad size %q (valid: a positive byte count such as 4096, 4K, 1M, 8G)", clipFlag(orig))
	}
	v *= mult
	switch {
	case v <= 0:
		return 0, fmt.Errorf("size %q must be > 0", clipFlag(orig))
	case v > float64(maxSize):
		return 0, fmt.Errorf("size %q is larger than 1P", clipFlag(orig))
	case v != math.Trunc(v):
		return 0, fmt.Errorf("size %q is not a whole number of bytes", clipFlag(orig))
	}
	return int64(v), nil
}
