package htmlreport

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/simtrain/simtrain/sim/output"
)

// memoryParts are the parts of a rank's peak memory, as memory.arrow
// splits it, with their colours.
var memoryParts = []struct {
	name, color string
	get         func(*output.MemoryRow) float64
}{
	{"weights", "#4e79a7", func(m *output.MemoryRow) float64 { return float64(m.WeightsBytes) }},
	{"gradients", "#f28e2b", func(m *output.MemoryRow) float64 { return float64(m.GradientsBytes) }},
	{"optimizer", "#59a14f", func(m *output.MemoryRow) float64 { return float64(m.OptimizerBytes) }},
	{"activations", "#e15759", func(m *output.MemoryRow) float64 { return float64(m.ActivationsBytes) }},
	{"buffers", "#76b7b2", func(m *output.MemoryRow) float64 { return float64(m.BuffersBytes) }},
	{"overhead", "#bab0ac", func(m *output.MemoryRow) float64 { return float64(m.OverheadBytes) }},
}

// maxMemoryBars is the most pipeline stages the memory chart draws; more
// are sampled evenly (the first and the last always drawn).
const maxMemoryBars = 64

// MemorySVG draws one stacked bar per pipeline stage: the peak memory of
// the stage's fullest rank split into weights, gradients, optimizer state,
// activations, buffers and overhead, against the GPU's capacity (dashed).
func MemorySVG(mem []output.MemoryRow) string {
	var b strings.Builder
	if len(mem) == 0 {
		return `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="memory" width="400" height="30" role="img"><text x="4" y="20">no memory rows</text></svg>`
	}
	byStage := map[int32]*output.MemoryRow{}
	for i := range mem {
		m := &mem[i]
		if cur, ok := byStage[m.Stage]; !ok || m.TotalBytes > cur.TotalBytes {
			byStage[m.Stage] = m
		}
	}
	stages := make([]int32, 0, len(byStage))
	for s := range byStage {
		stages = append(stages, s)
	}
	slices.Sort(stages)
	if len(stages) > maxMemoryBars {
		idx := make([]int, len(stages))
		for i := range idx {
			idx[i] = i
		}
		keep := sampleEvenly(idx, maxMemoryBars-1)
		sampled := make([]int32, 0, maxMemoryBars)
		for _, i := range keep {
			sampled = append(sampled, stages[i])
		}
		stages = append(sampled, stages[len(stages)-1])
	}
	top := 0.0
	for _, s := range stages {
		m := byStage[s]
		top = max(top, float64(m.TotalBytes), float64(m.CapacityBytes))
	}
	const label, plotW, barH, gap, right = 80, 720, 18, 6, 170
	height := 10 + len(stages)*(barH+gap) + 62
	width := label + plotW + right
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="memory" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="peak memory per pipeline stage">`, width, height, width, height)
	b.WriteString("\n")
	ax := axis{lo: 0, hi: top * 1.02, p0: label, p1: label + plotW}
	for i, s := range stages {
		m := byStage[s]
		y := 10 + i*(barH+gap)
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="lbl">stage %d</text>`, label-6, y+barH-5, s)
		x := 0.0
		for _, part := range memoryParts {
			v := part.get(m)
			if v <= 0 {
				continue
			}
			px0, px1 := ax.pos(x), ax.pos(x+v)
			fmt.Fprintf(&b, `<rect x="%s" y="%d" width="%s" height="%d" fill="%s"><title>stage %d (rank %d): %s %s</title></rect>`,
				num(px0), y, num(px1-px0), barH, part.color, s, m.Rank, part.name, fmtGB(v))
			x += v
		}
		fits := ""
		if !m.Fits {
			fits = " — does not fit"
		}
		fmt.Fprintf(&b, `<text x="%s" y="%d" class="val">%s of %s%s</text>`, num(ax.pos(float64(max(m.TotalBytes, m.CapacityBytes)))+6), y+barH-5, fmtGB(float64(m.TotalBytes)), fmtGB(float64(m.CapacityBytes)), fits)
		if m.CapacityBytes > 0 {
			cx := ax.pos(float64(m.CapacityBytes))
			fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%d" y2="%d" class="cap"/>`, num(cx), num(cx), y-2, y+barH+2)
		}
		b.WriteString("\n")
	}
	ya := 10 + len(stages)*(barH+gap)
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" class="axis"/>`, label, label+plotW, ya, ya)
	for _, v := range linearTicks(0, top*1.02, 8) {
		px := ax.pos(v)
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%d" y2="%d" class="axis"/><text x="%s" y="%d" class="tick">%s</text>`,
			num(px), num(px), ya, ya+4, num(px), ya+16, tickNum(v/1e9)+" GB")
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="axlbl">peak memory of the stage's fullest rank (dashed: GPU capacity)</text>`, label+plotW/2, ya+32)
	items := make([][2]string, len(memoryParts))
	for i, p := range memoryParts {
		items[i] = [2]string{p.name, p.color}
	}
	legendSVG(&b, label, ya+44, items)
	b.WriteString("</svg>")
	return b.String()
}

// Heatmap geometry: cells per row and the most cells a link kind gets
// (more links are binned, a cell then showing its bin's busiest link).
const (
	heatCols     = 64
	heatMaxCells = 1024
	heatCell     = 11
)

// heatColor maps a utilisation in [0, 1] onto a white-yellow-red scale;
// an idle link is light grey.
func heatColor(u float64) string {
	if u <= 0 {
		return "#eeeeee"
	}
	u = math.Min(u, 1)
	stops := [][3]float64{{255, 255, 204}, {253, 141, 60}, {128, 0, 38}}
	f := u * 2
	i := min(int(f), 1)
	f -= float64(i)
	c := [3]float64{}
	for j := range c {
		c[j] = stops[i][j] + f*(stops[i+1][j]-stops[i][j])
	}
	return fmt.Sprintf("#%02x%02x%02x", int(c[0]), int(c[1]), int(c[2]))
}

// LinkHeatmapSVG draws every link's utilisation over the simulated steps as
// a grid of cells, one block of rows per link kind, links in topology
// order. A kind with more than 1,024 links is binned into 1,024 cells of
// consecutive links, each showing its bin's busiest link.
func LinkHeatmapSVG(links []output.LinkRow) string {
	var b strings.Builder
	if len(links) == 0 {
		return `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="links" width="400" height="30" role="img"><text x="4" y="20">no links</text></svg>`
	}
	var kinds []string
	byKind := map[string][]*output.LinkRow{}
	for i := range links {
		l := &links[i]
		if _, ok := byKind[l.Kind]; !ok {
			kinds = append(kinds, l.Kind)
		}
		byKind[l.Kind] = append(byKind[l.Kind], l)
	}
	for _, ls := range byKind {
		slices.SortStableFunc(ls, func(a, b *output.LinkRow) int { return cmp.Compare(a.Link, b.Link) })
	}
	const label = 150
	y := 4
	var body strings.Builder
	for _, k := range kinds {
		ls := byKind[k]
		per := (len(ls) + heatMaxCells - 1) / heatMaxCells
		cells := (len(ls) + per - 1) / per
		maxU, sumU := 0.0, 0.0
		for _, l := range ls {
			maxU, sumU = math.Max(maxU, l.Utilization), sumU+l.Utilization
		}
		head := fmt.Sprintf("%s: %s links, busiest %s, mean %s", k, fmtCount(len(ls)), fmtPct(maxU), fmtPct(sumU/float64(len(ls))))
		if per > 1 {
			head += fmt.Sprintf(" (a cell is %d links)", per)
		}
		fmt.Fprintf(&body, `<text x="0" y="%d" class="kind">%s</text>`, y+11, esc(head))
		y += 16
		for c := 0; c < cells; c++ {
			bin := ls[c*per : min((c+1)*per, len(ls))]
			top := bin[0]
			for _, l := range bin {
				if l.Utilization > top.Utilization {
					top = l
				}
			}
			title := fmt.Sprintf("link %d %s → %s: %s busy, %s moved", top.Link, top.From, top.To, fmtPct(top.Utilization), fmtGB(float64(top.Bytes)))
			if len(bin) > 1 {
				title = fmt.Sprintf("links %d…%d, busiest ", bin[0].Link, bin[len(bin)-1].Link) + title
			}
			x := label + (c%heatCols)*heatCell
			cy := y + (c/heatCols)*heatCell
			fmt.Fprintf(&body, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s</title></rect>`,
				x, cy, heatCell-1, heatCell-1, heatColor(top.Utilization), esc(title))
		}
		body.WriteString("\n")
		y += ((cells+heatCols-1)/heatCols)*heatCell + 8
	}
	// Colour scale.
	y += 6
	for i := 0; i <= 10; i++ {
		u := float64(i) / 10
		fmt.Fprintf(&body, `<rect x="%d" y="%d" width="20" height="10" fill="%s"/>`, label+i*20, y, heatColor(math.Max(u, 1e-9)))
	}
	fmt.Fprintf(&body, `<text x="%d" y="%d" class="lbl">utilisation</text><text x="%d" y="%d" class="tick">0%%</text><text x="%d" y="%d" class="tick">100%%</text>`,
		label-6, y+9, label+10, y+22, label+210, y+22)
	height := y + 30
	width := label + heatCols*heatCell + 10
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="links" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="link utilisation heatmap">`, width, height, width, height)
	b.WriteString("\n")
	b.WriteString(body.String())
	b.WriteString("</svg>")
	return b.String()
}

// maxScatter is the most points the Pareto plot draws; the front is always
// drawn, the other points sampled evenly by name when there are more.
const maxScatter = 20000

// paretoX is the Pareto plot's x quantity: cost per step when the sweep
// prices its GPUs, else the GPU count.
func paretoX(rows []output.SummaryRow) (string, func(*output.SummaryRow) float64) {
	for i := range rows {
		if rows[i].CostUSDPerStep > 0 {
			return "cost per step (USD)", func(r *output.SummaryRow) float64 { return r.CostUSDPerStep }
		}
	}
	return "GPUs", func(r *output.SummaryRow) float64 { return float64(r.NumGPUs) }
}

// simulated returns the rows that simulated (no error, a positive step time).
func simulated(rows []output.SummaryRow) []output.SummaryRow {
	var out []output.SummaryRow
	for _, r := range rows {
		if r.Error == "" && r.StepTimeS > 0 {
			out = append(out, r)
		}
	}
	return out
}

// ParetoFront returns the fitting rows that no other fitting row beats on
// both x and step time (lower is better on both), by increasing x; ties go
// to the first by name, as `simtrain best` breaks them.
func ParetoFront(rows []output.SummaryRow, x func(*output.SummaryRow) float64) []output.SummaryRow {
	var s []output.SummaryRow
	for _, r := range rows {
		if r.Fits && r.Error == "" && r.StepTimeS > 0 {
			s = append(s, r)
		}
	}
	return Front(s, func(r output.SummaryRow) float64 { return x(&r) },
		func(r output.SummaryRow) float64 { return r.StepTimeS }, compareNames)
}

// Front returns the items that no other item beats on both x and y (lower
// is better on both), by increasing x. Among items with equal x only the
// one with the lowest y can be on the front; exact ties keep the first by
// tie.
func Front[T any](items []T, x, y func(T) float64, tie func(a, b T) int) []T {
	s := slices.Clone(items)
	slices.SortStableFunc(s, func(a, b T) int {
		return cmp.Or(cmp.Compare(x(a), x(b)), cmp.Compare(y(a), y(b)), tie(a, b))
	})
	var front []T
	best := math.Inf(1)
	for _, it := range s {
		if y(it) < best {
			front = append(front, it)
			best = y(it)
		}
	}
	return front
}

// ParetoSVG plots every simulated point's step time against its cost per
// step (or GPU count when no price is known): fitting layouts filled,
// layouts that do not fit hollow, the Pareto front of the fitting ones as a
// red step line.
func ParetoSVG(rows []output.SummaryRow) string {
	var b strings.Builder
	pts := simulated(rows)
	if len(pts) == 0 {
		return `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="pareto" width="400" height="30" role="img"><text x="4" y="20">no simulated points</text></svg>`
	}
	xName, x := paretoX(pts)
	front := ParetoFront(pts, x)
	slices.SortFunc(pts, compareNames)
	if len(pts) > maxScatter {
		idx := make([]int, len(pts))
		for i := range idx {
			idx[i] = i
		}
		var keep []output.SummaryRow
		for _, i := range sampleEvenly(idx, maxScatter) {
			keep = append(keep, pts[i])
		}
		pts = keep
	}
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i := range pts {
		xlo, xhi = math.Min(xlo, x(&pts[i])), math.Max(xhi, x(&pts[i]))
		ylo, yhi = math.Min(ylo, pts[i].StepTimeS), math.Max(yhi, pts[i].StepTimeS)
	}
	for i := range front {
		xlo, xhi = math.Min(xlo, x(&front[i])), math.Max(xhi, x(&front[i]))
		ylo, yhi = math.Min(ylo, front[i].StepTimeS), math.Max(yhi, front[i].StepTimeS)
	}
	const left, top, plotW, plotH = 80, 16, 720, 400
	ax := newAxis(xlo, xhi, left, left+plotW, 4)
	ay := newAxis(ylo, yhi, top+plotH, top, 10)
	width, height := left+plotW+20, top+plotH+56
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="pareto" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="step time against %s">`, width, height, width, height, esc(xName))
	b.WriteString("\n")
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" class="frame"/>`, left, top, plotW, plotH)
	xfmt := func(v float64) string {
		if xName == "GPUs" {
			return grouped(v)
		}
		return tickUSD(v)
	}
	for _, v := range ax.ticks(6) {
		px := ax.pos(v)
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%d" y2="%d" class="grid"/><text x="%s" y="%d" class="tick">%s</text>`,
			num(px), num(px), top, top+plotH, num(px), top+plotH+16, esc(xfmt(v)))
	}
	for _, v := range ay.ticks(6) {
		py := ay.pos(v)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%s" y2="%s" class="grid"/><text x="%d" y="%s" class="lbl">%s</text>`,
			left, left+plotW, num(py), num(py), left-6, num(py+4), esc(tickSeconds(v)))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="axlbl">%s</text>`, left+plotW/2, top+plotH+40, esc(xName))
	fmt.Fprintf(&b, `<text x="14" y="%d" class="axlbl" transform="rotate(-90 14 %d)">step time</text>`, top+plotH/2, top+plotH/2)
	b.WriteString("\n")
	for i := range pts {
		r := &pts[i]
		cls := "pt"
		if !r.Fits {
			cls = "pt nofit"
		}
		fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" class="%s"><title>%s</title></circle>`,
			num(ax.pos(x(r))), num(ay.pos(r.StepTimeS)), cls, esc(pointTitle(r, xName, x)))
	}
	b.WriteString("\n")
	if len(front) > 0 {
		var path strings.Builder
		for i := range front {
			px, py := ax.pos(x(&front[i])), ay.pos(front[i].StepTimeS)
			if i == 0 {
				fmt.Fprintf(&path, "M%s,%s", num(px), num(py))
			} else {
				// A step: the front holds its step time until the next point.
				fmt.Fprintf(&path, " H%s V%s", num(px), num(py))
			}
		}
		fmt.Fprintf(&b, `<path d="%s" class="front"/>`, path.String())
		for i := range front {
			r := &front[i]
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="4.5" class="pt best"><title>Pareto front: %s</title></circle>`,
				num(ax.pos(x(r))), num(ay.pos(r.StepTimeS)), esc(pointTitle(r, xName, x)))
		}
	}
	b.WriteString("</svg>")
	return b.String()
}

// pointTitle is a sweep point's tooltip.
func pointTitle(r *output.SummaryRow, xName string, x func(*output.SummaryRow) float64) string {
	s := fmt.Sprintf("%s: %d× %s, %s; step %s, MFU %s, %s peak", r.Name, r.NumGPUs, r.GPU,
		layoutString(r.TP, r.PP, r.DP, r.CP, r.EP, r.Zero, r.Schedule), fmtSeconds(r.StepTimeS), fmtPct(r.MFU), fmtGB(float64(r.PeakMemBytes)))
	if xName != "GPUs" {
		s += ", " + fmtUSD(x(r)) + " per step"
	}
	if !r.Fits {
		s += " (does not fit)"
	}
	return s
}
