package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/simtrain/simtrain/sim"
	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
)

// summaryRow flattens a scenario (and its result, when it ran) into the
// summary.arrow schema; sweeps use it for every point.
func summaryRow(s *scenario.Plan, r *sim.Result) output.SummaryRow {
	m := s.Model
	t := s.Training
	c := s.Cluster
	p := s.Parallel
	row := output.SummaryRow{
		RunID: s.RunID(), Name: s.Name,
		ModelPreset: m.Preset, Layers: int64(m.Layers), Hidden: int64(m.Hidden), Heads: int64(m.Heads),
		KVHeads: int64(m.KVHeads), FFN: int64(m.FFN), Vocab: int64(m.Vocab),
		SeqLen: int64(t.SeqLen), GlobalBatch: int64(t.GlobalBatch), MicroBatch: int64(t.MicroBatch),
		Precision: t.Precision, Optimizer: t.Optimizer, Recompute: t.Recompute, FlashAttention: *t.FlashAttention,
		GPU: c.GPU, Nodes: int64(c.Nodes), GPUsPerNode: int64(c.GPUsPerNode), NumGPUs: int64(s.GPUs()),
		IntraNode: c.IntraNode, Network: c.Network.Kind, NIC: c.Network.NIC, NICGbps: c.Network.NICGbps,
		NICsPerNode: int64(c.Network.NICsPerNode), Oversubscription: c.Network.Oversubscription, PodGPUs: int64(c.Network.PodGPUs),
		TP: int64(p.TP), PP: int64(p.PP), DP: int64(p.DP), CP: int64(p.CP), EP: int64(p.EP), SP: p.SP, Zero: int64(p.Zero),
		Schedule: p.Schedule, VirtualStages: int64(p.VirtualStages), Microbatches: int64(s.Microbatches()),
		Fidelity: s.Sim.Fidelity, Steps: int64(s.Sim.Steps),
	}
	if m.Preset == "" {
		row.ModelPreset = "custom"
	}
	if m.MoE != nil {
		row.Experts, row.TopK = int64(m.MoE.Experts), int64(m.MoE.TopK)
	}
	arch := s.Arch()
	pc := arch.Params()
	row.Params, row.ActiveParams = pc.Total, pc.Active
	if r == nil {
		return row
	}
	row.StepTimeS, row.TokensPerS, row.TokensPerSPerGPU = r.StepTimeS, r.TokensPerS, r.TokensPerSPerGPU
	row.ModelFLOPsPerStep, row.HardwareFLOPsPerStep = r.ModelFLOPsPerStep, r.HardwareFLOPsPerStep
	row.MFU, row.HFU, row.TFLOPsPerGPU = r.MFU, r.HFU, r.TFLOPsPerGPU
	row.BubbleFraction, row.ComputeS, row.HostSyncS = r.BubbleFraction, r.ComputeS, r.HostSyncS
	row.ExposedTPS, row.ExposedCPS, row.ExposedEPS, row.ExposedDPS, row.ExposedPPS =
		r.ExposedCommS[0], r.ExposedCommS[1], r.ExposedCommS[2], r.ExposedCommS[3], r.ExposedCommS[4]
	row.PeakMemBytes, row.MinPeakMemBytes, row.MemCapacityBytes, row.Fits = r.PeakMemBytes, r.MinPeakMemBytes, r.MemCapacityBytes, r.Fits
	row.CostUSDPerStep, row.EnergyKWhPerStep = r.CostUSDPerStep, r.EnergyKWhPerStep
	row.Events, row.SimWallS = int64(r.Events), r.SimWallS
	return row
}

// fileMeta is the schema metadata every output file of a run carries.
func fileMeta(r *sim.Result) map[string]string {
	return map[string]string{
		"run_id":   r.RunID,
		"scenario": r.Scenario.Name,
		"fidelity": r.Scenario.Sim.Fidelity,
		"config":   string(r.Scenario.CanonicalJSON()),
	}
}

// writeRunDir writes every output file of one run into OUT/<name> as one
// unit (output.WriteDir: inside OUT, locked, atomic, leftovers of killed
// runs cleaned); ctx cancels it and leaves nothing behind. extras adds
// optional files to the finished directory before it is committed.
func writeRunDir(ctx context.Context, out string, r *sim.Result, timeline bool, tlRanks, trRanks rankSet, warn func(string), extras func(dir string) error) error {
	_, err := output.WriteDir(ctx, out, r.Scenario.Name, output.DirOptions{Warn: warn}, func(tmp string) error {
		meta := fileMeta(r)
		if err := output.WriteTable(filepath.Join(tmp, "summary.arrow"), []output.SummaryRow{summaryRow(r.Scenario, r)}, meta); err != nil {
			return err
		}
		if err := output.WriteTable(filepath.Join(tmp, "memory.arrow"), memoryRows(r), meta); err != nil {
			return err
		}
		if err := output.WriteTable(filepath.Join(tmp, "links.arrow"), linkRows(r), meta); err != nil {
			return err
		}
		if timeline {
			if err := writeTimeline(ctx, tmp, r, meta, tlRanks, trRanks); err != nil {
				return err
			}
		}
		return extras(tmp)
	})
	return err
}

func memoryRows(r *sim.Result) []output.MemoryRow {
	var rows []output.MemoryRow
	for rank := 0; rank < r.Layout.World(); rank++ {
		st := r.Layout.CoordOf(rank).PP
		m := r.Memory[st]
		rows = append(rows, output.MemoryRow{
			Rank: int64(rank), Node: int64(r.Cluster.NodeOf(rank)), Stage: int64(st),
			WeightsBytes: m.Weights, GradientsBytes: m.Gradients, OptimizerBytes: m.Optimizer,
			ActivationsBytes: m.Activations, BuffersBytes: m.Buffers, OverheadBytes: m.Overhead,
			TotalBytes: m.Total, CapacityBytes: r.MemCapacityBytes, Fits: m.Fits,
		})
	}
	return rows
}

func linkRows(r *sim.Result) []output.LinkRow {
	var rows []output.LinkRow
	total := r.StepTimeS * float64(r.Scenario.Sim.Steps)
	for _, l := range r.Links() {
		u := 0.0
		if total > 0 && l.Bandwidth > 0 {
			u = l.Bytes / (l.Bandwidth * total)
		}
		rows = append(rows, output.LinkRow{Link: int64(l.ID), From: l.From, To: l.To, Kind: l.Kind,
			BandwidthBytesPerS: l.Bandwidth, Bytes: l.Bytes, BusyNs: l.BusyNs, Utilization: u})
	}
	return rows
}

func writeTimeline(ctx context.Context, dir string, r *sim.Result, meta map[string]string, tlSet, trSet rankSet) error {
	world := r.Layout.World()
	tlRanks := tlSet.ranks(world, r.TimelineRanks)
	trRanks := trSet.ranks(world, r.TimelineRanks)
	tlMeta := map[string]string{"ranks": rankListString(tlRanks), "symmetric": strconv.FormatBool(r.Symmetric())}
	for k, v := range meta {
		tlMeta[k] = v
	}
	dicts := output.TimelineDicts{Stream: parallel.StreamNames, Kind: parallel.KindNames,
		Group: []string{"", "tp", "cp", "ep", "dp", "pp", "edp"}}
	tw, err := output.NewTimelineWriter(filepath.Join(dir, "timeline.arrow"), tlMeta, dicts)
	if err != nil {
		return err
	}
	if err := emitRows(ctx, r, tlRanks, tw.Write); err != nil {
		tw.Abort()
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	trMeta := output.TraceMeta{Streams: parallel.StreamNames, Other: map[string]string{
		"run_id": r.RunID, "scenario": r.Scenario.Name, "ranks": rankListString(trRanks)}}
	trw, err := output.NewTraceWriter(filepath.Join(dir, "trace.json"), trMeta)
	if err != nil {
		return err
	}
	if err := emitRows(ctx, r, trRanks, trw.Write); err != nil {
		trw.Abort()
		return err
	}
	return trw.Close()
}

// emitRows streams the timeline rows of ranks to write in batches; a
// cancelled ctx stops it between two batches.
func emitRows(ctx context.Context, r *sim.Result, ranks []int, write func([]output.TimelineRow) error) error {
	const batch = 1 << 16
	buf := make([]output.TimelineRow, 0, batch)
	var werr error
	r.Tasks(ranks, func(t sim.TaskRecord) {
		if werr != nil {
			return
		}
		buf = append(buf, output.TimelineRow{Step: int32(t.Step), Rank: int32(t.Rank), Node: int32(t.Node),
			Stream: t.Stream, Kind: t.Kind, Name: t.Name, Layer: int32(t.Layer), Microbatch: int32(t.Microbatch),
			Chunk: int32(t.Chunk), StartNs: t.StartNs, EndNs: t.EndNs, FLOPs: t.FLOPs, Bytes: t.Bytes, Group: t.Group})
		if len(buf) == batch {
			if werr = ctx.Err(); werr == nil {
				werr = write(buf)
			}
			buf = buf[:0]
		}
	})
	if werr != nil {
		return werr
	}
	if len(buf) > 0 {
		return write(buf)
	}
	return nil
}

// rankListString compresses a sorted rank list into "0-7,16".
func rankListString(ranks []int) string {
	s := ""
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if s != "" {
			s += ","
		}
		if j > i {
			s += fmt.Sprintf("%d-%d", ranks[i], ranks[j])
		} else {
			s += strconv.Itoa(ranks[i])
		}
		i = j + 1
	}
	return s
}
