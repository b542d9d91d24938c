package main

import (
	"bytes"
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/output/htmlreport"
	"github.com/simtrain/simtrain/sim/output/numfmt"
	"github.com/simtrain/simtrain/sim/scenario"
)

type bestOptions struct {
	by          string
	constraints []string
	top         int
	tokens      string
	pareto      string
	svg         string
	noSVG       bool
	format      string
}

func newBestCmd() *cobra.Command {
	var o bestOptions
	cmd := &cobra.Command{
		Use:   "best DIR|FILE...",
		Short: "Rank a sweep's layouts and show the Pareto front of step time against GPUs or cost",
		Long: `best reads a sweep's summary rows (a sweep directory, or summary files from
simtrain merge), keeps the simulated rows that satisfy every --constraint, and
prints the top layouts by --by and the Pareto front: the layouts no other
layout beats on both step time and GPU count (--pareto gpus) or cost per step
(--pareto cost). It writes the front as an SVG plot.

--by tokens_per_s      highest training throughput first
--by cost_per_token    lowest cost per token first: cost_usd_per_step (GPU-hour
                       price × GPUs × step time) / tokens per step
--by time_to_train     shortest time to train --tokens tokens first
--by goodput           highest goodput first: tokens_per_s × the effective
                       training fraction of the whole run (failures, restarts,
                       checkpoints; docs/goodput.md), from the sweep's
                       goodput-summary.arrow (points with a goodput: block)

When the sweep directory holds goodput-summary.arrow, the table adds each
layout's effective training fraction and goodput, and time_to_train and the
train columns count the time lost to failures and checkpoints (so a layout
that is fast but checkpoints slowly can lose).

With --tokens N (e.g. 15T, 2e12) the table adds the time, cost and energy to
train on N tokens: N / tokens_per_s, and cost_usd_per_step and
energy_kwh_per_step (GPU TDP × PUE) scaled by the number of steps.

A constraint is a boolean column (fits, !fits, sp), or COLUMN OP VALUE with OP
one of == != < <= > >= and any summary.arrow column (results/README.md):
'num_gpus<=512', 'gpu==h100-sxm', 'peak_mem_bytes<70e9'. Without --constraint
the only one is fits. Rows with an error and rows not simulated (pruned for
memory) are never ranked.`,
		Example: `  simtrain best results/l70
  simtrain best results/l70 --by cost_per_token --tokens 15T --top 5
  simtrain best all.parquet --constraint fits --constraint 'tp<=8' --pareto cost --svg front.svg`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("best: give a sweep directory or summary file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runBest(cmd, args, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.by, "by", "tokens_per_s", "ranking: tokens_per_s, cost_per_token, time_to_train or goodput")
	f.StringArrayVar(&o.constraints, "constraint", nil, "keep rows satisfying this (repeatable; default: fits)")
	f.IntVar(&o.top, "top", 10, "rows in the ranking")
	f.StringVar(&o.tokens, "tokens", "", "training tokens (e.g. 15T, 300B, 2e12): adds time, cost and energy to train")
	f.StringVar(&o.pareto, "pareto", "gpus", "Pareto front of step time against: gpus or cost (cost_usd_per_step)")
	f.StringVar(&o.svg, "svg", "", "plot of the Pareto front: .svg (.png and .pdf work too; default DIR/pareto.svg, or FILE.pareto.svg next to a file)")
	f.BoolVar(&o.noSVG, "no-svg", false, "do not write the SVG")
	f.StringVar(&o.format, "format", "table", "output: table or json (one object)")
	return cmd
}

// rankedRow is a summary row with its derived figures.
type rankedRow struct {
	output.SummaryRow
	CostPerToken float64 // USD
	TrainS       float64 // with --tokens
	TrainUSD     float64
	TrainKWh     float64
	// Goodput is the point's whole-run goodput, when the sweep wrote it.
	Goodput *output.GoodputSummaryRow
}

// effectiveTokensPerS is tokens/s over the whole run: × the effective
// training fraction when the row has one.
func (r rankedRow) effectiveTokensPerS() float64 {
	if r.Goodput != nil {
		return r.Goodput.GoodputTokensPerS
	}
	return r.TokensPerS
}

func runBest(cmd *cobra.Command, args []string, o bestOptions) error {
	if err := checkChoice("by", o.by, "tokens_per_s", "cost_per_token", "time_to_train", "goodput"); err != nil {
		return err
	}
	if err := checkChoice("pareto", o.pareto, "gpus", "cost"); err != nil {
		return err
	}
	if err := checkChoice("format", o.format, "table", "json"); err != nil {
		return err
	}
	if o.top < 1 {
		return usageErrorf("--top: must be >= 1, got %d", o.top)
	}
	tokens := 0.0
	if o.tokens != "" {
		t, err := parseCount(o.tokens)
		if err != nil {
			return usageErrorf("--tokens: %v", err)
		}
		tokens = t
	}
	if o.by == "time_to_train" && tokens == 0 {
		return usageErrorf("--by time_to_train: needs --tokens N (the tokens to train on, e.g. 15T)")
	}
	cons := o.constraints
	if len(cons) == 0 {
		cons = []string{"fits"}
	}
	var preds []constraint
	for _, c := range cons {
		p, err := parseConstraint(c)
		if err != nil {
			return err
		}
		preds = append(preds, p)
	}
	rows, _, _, err := readSummaries(args)
	if err != nil {
		return err
	}
	rows, _, _ = dedupeRows(rows)
	goodputs, err := readGoodputSides(args)
	if err != nil {
		return err
	}
	if o.by == "goodput" && len(goodputs) == 0 {
		return usageErrorf("--by goodput: no goodput-summary.arrow in %s (sweep a base scenario with a goodput: block)", strings.Join(args, ", "))
	}
	var kept []rankedRow
	simulated := 0
	for _, r := range rows {
		if r.Error != "" || r.StepTimeS <= 0 {
			continue
		}
		simulated++
		ok := true
		for _, p := range preds {
			ok = ok && p.holds(r)
		}
		if !ok {
			continue
		}
		rr := rankedRow{SummaryRow: r}
		if g, ok := goodputs[r.RunID]; ok && g.EffectiveTrainingFraction > 0 {
			rr.Goodput = &g
		} else if o.by == "goodput" {
			continue // no goodput for this point: nothing to rank it by
		}
		if tps := float64(r.GlobalBatch) * float64(r.SeqLen); tps > 0 {
			rr.CostPerToken = r.CostUSDPerStep / tps
			if tokens > 0 {
				steps := tokens / tps
				rr.TrainS = steps * r.StepTimeS
				rr.TrainUSD = steps * r.CostUSDPerStep
				rr.TrainKWh = steps * r.EnergyKWhPerStep
				if rr.Goodput != nil { // the wall time and GPU-hours of the whole run
					rr.TrainS /= rr.Goodput.EffectiveTrainingFraction
					rr.TrainUSD /= rr.Goodput.EffectiveTrainingFraction
				}
			}
		}
		kept = append(kept, rr)
	}
	if len(kept) == 0 {
		return fmt.Errorf("best: no row satisfies %s (%d rows, %d simulated)", strings.Join(cons, " and "), len(rows), simulated)
	}
	rankRows(kept, o.by)
	top := kept[:min(o.top, len(kept))]
	xName, x := paretoAxis(o.pareto)
	front := paretoFront(kept, x)
	w := cmd.OutOrStdout()
	if o.format == "json" {
		if err := writeJSONLine(w, bestJSON(top, front, o.by, xName, tokens)); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "%s of %s rows satisfy %s (%s simulated); top %d by %s:\n", groupedInt(len(kept)), groupedInt(len(rows)), strings.Join(cons, " and "), groupedInt(simulated), len(top), o.by)
		printRanked(w, top, tokens)
		fmt.Fprintf(w, "\nPareto front, step time against %s (%d layouts):\n", xName, len(front))
		printRanked(w, front, tokens)
	}
	if o.noSVG {
		return nil
	}
	svg := o.svg
	if svg == "" {
		if st, err := os.Stat(args[0]); err == nil && st.IsDir() {
			svg = filepath.Join(args[0], "pareto.svg")
		} else {
			svg = strings.TrimSuffix(args[0], filepath.Ext(args[0])) + ".pareto.svg"
		}
	}
	if err := writeParetoSVG(svg, kept, front, x, xName, commonName(rows)); err != nil {
		return err
	}
	if o.format == "table" {
		fmt.Fprintf(w, "\nwrote %s\n", svg)
	}
	return nil
}

// rankRows sorts rows best first by the metric; ties go to the name, so the
// order is deterministic.
func rankRows(rows []rankedRow, by string) {
	slices.SortStableFunc(rows, func(a, b rankedRow) int {
		var c int
		switch by {
		case "tokens_per_s":
			c = cmp.Compare(b.TokensPerS, a.TokensPerS)
		case "time_to_train", "goodput":
			c = cmp.Compare(b.effectiveTokensPerS(), a.effectiveTokensPerS())
		case "cost_per_token":
			c = cmp.Or(cmp.Compare(a.CostPerToken, b.CostPerToken), cmp.Compare(b.TokensPerS, a.TokensPerS))
		}
		return cmp.Or(c, compareRows(a.SummaryRow, b.SummaryRow))
	})
}

func paretoAxis(kind string) (string, func(rankedRow) float64) {
	if kind == "cost" {
		return "cost per step (USD)", func(r rankedRow) float64 { return r.CostUSDPerStep }
	}
	return "GPUs", func(r rankedRow) float64 { return float64(r.NumGPUs) }
}

// paretoFront returns the rows that no other row beats on both x and step
// time (lower is better on both), by increasing x. Among rows with equal x
// only the fastest can be on the front; exact ties keep the first by name.
func paretoFront(rows []rankedRow, x func(rankedRow) float64) []rankedRow {
	return htmlreport.Front(rows, x, func(r rankedRow) float64 { return r.StepTimeS },
		func(a, b rankedRow) int { return compareRows(a.SummaryRow, b.SummaryRow) })
}

func printRanked(w io.Writer, rows []rankedRow, tokens float64) {
	tw := newTable(w)
	head := "#\tname\tgpu\tgpus\ttp\tpp\tdp\tcp\tep\tsp\tmb\tv\tzero\trecompute\tstep_s\ttokens/s\tMFU\tmem_GB\tUSD/Mtok"
	withGoodput := slices.ContainsFunc(rows, func(r rankedRow) bool { return r.Goodput != nil })
	if withGoodput {
		head += "\tETTR\tgoodput_tok/s"
	}
	if tokens > 0 {
		head += "\ttrain_days\ttrain_kUSD\ttrain_MWh"
	}
	fmt.Fprintln(tw, head+"\t")
	for i, r := range rows {
		line := fmt.Sprintf("%d\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%.1f%%\t%.1f\t%s",
			i+1, r.Name, r.GPU, r.NumGPUs, r.TP, r.PP, r.DP, r.CP, r.EP, yesNo(r.SP), r.MicroBatch, r.VirtualStages, r.Zero, r.Recompute,
			numfmt.Digits(r.StepTimeS, 4), numfmt.Grouped(r.TokensPerS), 100*r.MFU, float64(r.PeakMemBytes)/1e9, numfmt.Sig(r.CostPerToken*1e6))
		if withGoodput {
			if g := r.Goodput; g != nil {
				line += fmt.Sprintf("\t%.1f%%\t%s", 100*g.EffectiveTrainingFraction, numfmt.Grouped(g.GoodputTokensPerS))
			} else {
				line += "\t-\t-"
			}
		}
		if tokens > 0 {
			line += fmt.Sprintf("\t%s\t%s\t%s", numfmt.Sig(r.TrainS/86400), numfmt.Sig(r.TrainUSD/1e3), numfmt.Sig(r.TrainKWh/1e3))
		}
		fmt.Fprintln(tw, line+"\t")
	}
	tw.Flush()
}

func bestJSON(top, front []rankedRow, by, xName string, tokens float64) map[string]any {
	obj := func(r rankedRow) map[string]any {
		m := map[string]any{
			"name": r.Name, "run_id": r.RunID, "gpu": r.GPU, "num_gpus": r.NumGPUs,
			"tp": r.TP, "pp": r.PP, "dp": r.DP, "cp": r.CP, "ep": r.EP, "sp": r.SP, "zero": r.Zero,
			"micro_batch": r.MicroBatch, "schedule": r.Schedule, "virtual_stages": r.VirtualStages, "recompute": r.Recompute,
			"step_time_s": r.StepTimeS, "tokens_per_s": r.TokensPerS, "mfu": r.MFU, "peak_mem_bytes": r.PeakMemBytes,
			"cost_usd_per_step": r.CostUSDPerStep, "cost_usd_per_token": r.CostPerToken, "energy_kwh_per_step": r.EnergyKWhPerStep,
		}
		if tokens > 0 {
			m["train_s"], m["train_usd"], m["train_kwh"] = r.TrainS, r.TrainUSD, r.TrainKWh
		}
		if g := r.Goodput; g != nil {
			m["effective_training_fraction"], m["goodput_tokens_per_s"] = g.EffectiveTrainingFraction, g.GoodputTokensPerS
			m["checkpoint_write_s"], m["checkpoint_interval_s"] = g.CheckpointWriteS, g.CheckpointIntervalS
		}
		return m
	}
	var t, f []map[string]any
	for _, r := range top {
		t = append(t, obj(r))
	}
	for _, r := range front {
		f = append(f, obj(r))
	}
	out := map[string]any{"by": by, "top": t, "pareto_x": xName, "pareto": f}
	if tokens > 0 {
		out["tokens"] = tokens
	}
	return out
}

// commonName is the sweep name the rows share (their names less the
// "-<number>" suffix), or "".
func commonName(rows []output.SummaryRow) string {
	name := ""
	for i, r := range rows {
		n := r.Name
		if j := strings.LastIndexByte(n, '-'); j > 0 {
			n = n[:j]
		}
		if i == 0 {
			name = n
		} else if n != name {
			return ""
		}
	}
	return name
}

// writeParetoSVG plots every kept row (grey) and the Pareto front (a step
// line through its points) and writes the SVG atomically.
func writeParetoSVG(path string, rows, front []rankedRow, x func(rankedRow) float64, xName, title string) error {
	p := plot.New()
	p.Title.Text = "Step time against " + xName + ": Pareto front"
	if title != "" {
		p.Title.Text = title + ": step time against " + xName
	}
	p.X.Label.Text = xName
	p.Y.Label.Text = "step time (s)"
	all := make(plotter.XYs, len(rows))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, r := range rows {
		all[i] = plotter.XY{X: x(r), Y: r.StepTimeS}
		lo, hi = min(lo, x(r)), max(hi, x(r))
	}
	pts := make(plotter.XYs, len(front))
	for i, r := range front {
		pts[i] = plotter.XY{X: x(r), Y: r.StepTimeS}
	}
	sc, err := plotter.NewScatter(all)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Color = color.Gray{Y: 160}
	sc.GlyphStyle.Radius = vg.Points(2)
	line, marks, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	line.StepStyle = plotter.PostStep
	line.Color = color.RGBA{R: 200, G: 40, B: 40, A: 255}
	marks.Color = line.Color
	marks.Shape = draw.CircleGlyph{}
	marks.Radius = vg.Points(3)
	p.Add(plotter.NewGrid(), sc, line, marks)
	p.Legend.Add(fmt.Sprintf("layouts (%d)", len(rows)), sc)
	p.Legend.Add(fmt.Sprintf("Pareto front (%d)", len(front)), line, marks)
	p.Legend.Top = true
	if lo > 0 && hi/lo >= 4 {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{pow2: xName == "GPUs"}
	}
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		ylo, yhi = min(ylo, r.StepTimeS), max(yhi, r.StepTimeS)
	}
	if ylo > 0 && yhi/ylo >= 10 {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
	}
	if lo == hi { // one x value: give the axis some width
		p.X.Min, p.X.Max = lo*0.9, hi*1.1+1e-9
	}
	format := "svg"
	if ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), ".")); ext == "png" || ext == "pdf" {
		format = ext
	}
	wt, err := p.WriterTo(7*vg.Inch, 4.5*vg.Inch, format)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return err
	}
	tmp := path + ".tmp-" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// parseCount parses a count with an optional K/M/B/G/T/P suffix (powers of
// 1000) or an exponent: 15T, 300B, 2e12, 1000000.
func parseCount(s string) (float64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	if n := len(t); n > 0 {
		switch strings.ToUpper(t[n-1:]) {
		case "K":
			mult = 1e3
		case "M":
			mult = 1e6
		case "B", "G":
			mult = 1e9
		case "T":
			mult = 1e12
		case "P":
			mult = 1e15
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	v *= mult
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a positive count (e.g. 15T, 300B, 2e12)", clipFlag(s))
	}
	return v, nil
}

// summaryColumn is one column of summary.arrow, found by its arrow tag.
type summaryColumn struct {
	name  string
	index int
	kind  reflect.Kind
}

func summaryColumns() map[string]summaryColumn {
	t := reflect.TypeOf(output.SummaryRow{})
	m := map[string]summaryColumn{}
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("arrow"), ",")
		if name != "" {
			m[name] = summaryColumn{name: name, index: i, kind: t.Field(i).Type.Kind()}
		}
	}
	return m
}

// constraint is one --constraint predicate on a summary row.
type constraint struct {
	text string
	col  summaryColumn
	op   string
	num  float64
	str  string
	b    bool
}

var constraintOps = []string{"<=", ">=", "==", "!=", "<", ">", "="}

// unknownColumnHint names the valid choices for an unknown --constraint
// column in a bounded line: the closest name, else the columns that share the
// name's first word, else the column count, where they are listed and the
// usual ones. The summary has over 100 columns, so listing them all would
// make an error of several kilobytes.
func unknownColumnHint(name string, names []string) string {
	if near := scenario.Closest(name, names); near != "" {
		return fmt.Sprintf("did you mean %q?", near)
	}
	if word, _, _ := strings.Cut(name, "_"); len(word) >= 2 {
		var same []string
		for _, n := range names {
			if strings.HasPrefix(n, word) {
				same = append(same, n)
			}
		}
		if len(same) > 0 && len(same) <= 12 {
			return fmt.Sprintf("columns starting with %q: %s", clipFlag(word), strings.Join(same, ", "))
		}
	}
	return fmt.Sprintf("valid columns: the %d columns of summary.arrow (results/README.md), e.g. step_time_s, mfu, tokens_per_s, peak_mem_bytes, num_gpus, gpu, tp, pp, dp, fits", len(names))
}

// parseConstraint parses "fits", "!fits" or "COLUMN OP VALUE".
func parseConstraint(text string) (constraint, error) {
	c := constraint{text: text}
	cols := summaryColumns()
	bad := func(format string, a ...any) (constraint, error) {
		return c, usageErrorf("--constraint %q: "+format, append([]any{clipFlag(text)}, a...)...)
	}
	lookup := func(name string) (summaryColumn, error) {
		col, ok := cols[name]
		if !ok {
			names := make([]string, 0, len(cols))
			for k := range cols {
				names = append(names, k)
			}
			slices.Sort(names)
			hint := unknownColumnHint(name, names)
			_, err := bad("unknown column %q; %s", clipFlag(name), hint)
			return col, err
		}
		return col, nil
	}
	s := strings.TrimSpace(text)
	op, at := "", -1
	for _, o := range constraintOps {
		if i := strings.Index(s, o); i > 0 && (at < 0 || i < at) {
			op, at = o, i
		}
	}
	if op == "" {
		neg := strings.HasPrefix(s, "!")
		name := strings.TrimSpace(strings.TrimPrefix(s, "!"))
		col, err := lookup(name)
		if err != nil {
			return c, err
		}
		if col.kind != reflect.Bool {
			return bad("%s is not a true/false column; write %s OP VALUE with OP one of %s", name, name, strings.Join(constraintOps[:6], " "))
		}
		c.col, c.op, c.b = col, "==", !neg
		return c, nil
	}
	c.str = strings.TrimSpace(s[at+len(op):])
	if op == "=" {
		op = "=="
	}
	col, err := lookup(strings.TrimSpace(s[:at]))
	if err != nil {
		return c, err
	}
	c.col, c.op = col, op
	switch col.kind {
	case reflect.String:
		if op != "==" && op != "!=" {
			return bad("%s is a text column; use == or !=", col.name)
		}
		c.str = strings.Trim(c.str, `"'`)
	case reflect.Bool:
		if op != "==" && op != "!=" {
			return bad("%s is a true/false column; use == or !=", col.name)
		}
		b, err := strconv.ParseBool(c.str)
		if err != nil {
			return bad("%s is a true/false column; compare with true or false, not %q", col.name, clipFlag(c.str))
		}
		c.b = b == (op == "==")
		c.op = "=="
	default:
		v, err := strconv.ParseFloat(c.str, 64)
		if err != nil {
			return bad("%q is not a number", clipFlag(c.str))
		}
		c.num = v
	}
	return c, nil
}

// holds evaluates the constraint on r.
func (c constraint) holds(r output.SummaryRow) bool {
	v := reflect.ValueOf(r).Field(c.col.index)
	switch c.col.kind {
	case reflect.Bool:
		return v.Bool() == c.b
	case reflect.String:
		return (v.String() == c.str) == (c.op == "==")
	}
	var x float64
	if v.CanInt() {
		x = float64(v.Int())
	} else {
		x = v.Float()
	}
	switch c.op {
	case "<":
		return x < c.num
	case "<=":
		return x <= c.num
	case ">":
		return x > c.num
	case ">=":
		return x >= c.num
	case "==":
		return x == c.num
	default:
		return x != c.num
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// logTicks labels a logarithmic axis at 1, 2 and 5 times each power of ten
// (or at every power of two, for GPU counts), which gives labels even when
// the range spans less than a decade (plot.LogTicks labels only powers of
// ten).
type logTicks struct{ pow2 bool }

func (t logTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	if lo <= 0 || hi <= lo {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	add := func(v float64) {
		if v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
			out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 4, 64)})
		}
	}
	if t.pow2 {
		for v := math.Exp2(math.Floor(math.Log2(lo))); v <= hi*2; v *= 2 {
			add(v)
		}
		return out
	}
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			add(m * math.Pow(10, e))
		}
	}
	return out
}
