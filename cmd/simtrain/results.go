package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/report"
	"github.com/simtrain/simtrain/sim/simulation"
)

// writeRunDir writes every output file of one run into OUT/<name> as one
// unit (output.WriteDir: inside OUT, locked, atomic, leftovers of killed
// runs cleaned); ctx cancels it and leaves nothing behind. links.arrow is
// written, and its traffic computed, only with links. extras adds optional
// files to the finished directory before it is committed.
func writeRunDir(ctx context.Context, out string, r *simulation.Result, timeline, links bool, tlRanks, trRanks rankSet, warn func(string), extras func(dir string) error) error {
	_, err := output.WriteDir(ctx, out, r.Scenario.Name, output.DirOptions{Warn: warn}, func(tmp string) error {
		meta := report.Meta(r)
		if err := output.WriteTable(filepath.Join(tmp, "summary.arrow"), []output.SummaryRow{report.Summary(r.Scenario, r)}, meta); err != nil {
			return err
		}
		if err := output.WriteTable(filepath.Join(tmp, "memory.arrow"), report.Memory(r), meta); err != nil {
			return err
		}
		if links {
			n, row, kind := report.LinkRows(r)
			if err := output.WriteLinks(filepath.Join(tmp, "links.arrow"), n, row, kind, meta); err != nil {
				return err
			}
		}
		if r.Scenario.Sim.Variability != nil {
			if err := output.WriteTable(filepath.Join(tmp, "steps.arrow"), report.Steps(r), meta); err != nil {
				return err
			}
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

func writeTimeline(ctx context.Context, dir string, r *simulation.Result, meta map[string]string, tlSet, trSet rankSet) error {
	world := r.Layout.World()
	tlRanks := tlSet.ranks(world, r.TimelineRanks)
	trRanks := trSet.ranks(world, r.TimelineRanks)
	tlMeta := map[string]string{"ranks": rankListString(tlRanks), "symmetric": strconv.FormatBool(r.Symmetric())}
	for k, v := range meta {
		tlMeta[k] = v
	}
	tw, err := output.NewTimelineWriter(filepath.Join(dir, "timeline.arrow"), tlMeta, report.TimelineDicts())
	if err != nil {
		return err
	}
	if err := report.Timeline(ctx, r, tlRanks, tw.Write); err != nil {
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
	if err := report.Timeline(ctx, r, trRanks, trw.Write); err != nil {
		trw.Abort()
		return err
	}
	return trw.Close()
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
