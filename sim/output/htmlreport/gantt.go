package htmlreport

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/simtrain/simtrain/sim/output"
)

// Gantt chart geometry, in SVG pixels.
const (
	ganttWidth  = 960 // time axis: one task bin per pixel
	ganttLabel  = 150 // row labels on the left
	ganttRowH   = 14
	ganttRowGap = 3
	ganttTop    = 8
	ganttAxisH  = 36
)

// kindColors are the task colours, one per timeline kind (Tableau 10 and
// lighter companions); kinds not listed take otherColors in order.
var kindColors = map[string]string{
	"forward":        "#4e79a7",
	"backward":       "#f28e2b",
	"wgrad":          "#edc948",
	"recompute":      "#b07aa1",
	"optimizer":      "#59a14f",
	"host_sync":      "#bab0ac",
	"all_reduce":     "#e15759",
	"all_gather":     "#76b7b2",
	"reduce_scatter": "#ff9da7",
	"all_to_all":     "#9c755f",
	"send":           "#8cd17d",
	"recv":           "#86bcb6",
	"host_copy":      "#d4a6c8",
}

var otherColors = []string{"#499894", "#d37295", "#a0cbe8", "#ffbe7d", "#79706e", "#b6992d"}

// kindOrder lists the known kinds in legend order.
var kindOrder = []string{"forward", "backward", "wgrad", "recompute", "optimizer", "host_sync",
	"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send", "recv", "host_copy"}

// streamOrder lists the known streams in row order within a rank.
var streamOrder = []string{"compute", "tp", "cp", "ep", "dp", "pp_send", "pp_recv_act", "pp_recv_grad", "host_d2h", "host_h2d"}

// orderOf sorts names by their index in known, unknown names after them by name.
func orderOf(known []string) func(a, b string) int {
	idx := func(s string) int {
		if i := slices.Index(known, s); i >= 0 {
			return i
		}
		return len(known)
	}
	return func(a, b string) int { return cmp.Or(cmp.Compare(idx(a), idx(b)), cmp.Compare(a, b)) }
}

// colorsFor assigns a colour to every kind in kinds (sorted by kindOrder).
func colorsFor(kinds []string) map[string]string {
	out := map[string]string{}
	n := 0
	for _, k := range kinds {
		if c, ok := kindColors[k]; ok {
			out[k] = c
		} else {
			out[k] = otherColors[n%len(otherColors)]
			n++
		}
	}
	return out
}

type ganttRow struct {
	rank   int32
	stream string
}

// GanttSVG draws the timeline's tasks, one row per (rank, stream) that has
// any, against simulated time. Each pixel column of a row shows the kind
// that covers most of that pixel's time span, so the drawing has at most
// one rectangle per pixel and row however many tasks the step has; a
// rectangle's tooltip names its tasks and time span.
func GanttSVG(t *Timeline) string {
	var b strings.Builder
	if t == nil || len(t.Tasks) == 0 {
		b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="gantt" width="400" height="30" role="img"><text x="4" y="20">no tasks in the timeline</text></svg>`)
		return b.String()
	}
	tasks := t.Tasks
	// Rows and kinds.
	rowSet := map[ganttRow]bool{}
	kindSet := map[string]bool{}
	t0, t1 := tasks[0].StartNs, tasks[0].EndNs
	for i := range tasks {
		rowSet[ganttRow{tasks[i].Rank, tasks[i].Stream}] = true
		kindSet[tasks[i].Kind] = true
		t0, t1 = min(t0, tasks[i].StartNs), max(t1, tasks[i].EndNs)
	}
	streamCmp := orderOf(streamOrder)
	rows := make([]ganttRow, 0, len(rowSet))
	for r := range rowSet {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b ganttRow) int { return cmp.Or(cmp.Compare(a.rank, b.rank), streamCmp(a.stream, b.stream)) })
	rowIdx := make(map[ganttRow]int, len(rows))
	for i, r := range rows {
		rowIdx[r] = i
	}
	kinds := make([]string, 0, len(kindSet))
	for k := range kindSet {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, orderOf(kindOrder))
	kindIdx := map[string]int{}
	for i, k := range kinds {
		kindIdx[k] = i
	}
	colors := colorsFor(kinds)
	span := float64(max(t1-t0, 1))
	const W = ganttWidth
	K := len(kinds)

	// Per row: its tasks by start time (a stream runs one task at a time,
	// so their ends ascend too) and, per pixel, the time each kind covers.
	cover := make([][]float64, len(rows))
	byRow := make([][]int32, len(rows))
	for i := range rows {
		cover[i] = make([]float64, W*K)
	}
	for ti := range tasks {
		task := &tasks[ti]
		if task.EndNs <= task.StartNs {
			continue
		}
		ri, k := rowIdx[ganttRow{task.Rank, task.Stream}], kindIdx[task.Kind]
		byRow[ri] = append(byRow[ri], int32(ti))
		x0 := float64(task.StartNs-t0) / span * W
		x1 := float64(task.EndNs-t0) / span * W
		for p := int(x0); p < W && float64(p) < x1; p++ {
			if ov := min(x1, float64(p+1)) - max(x0, float64(p)); ov > 0 {
				cover[ri][p*K+k] += ov
			}
		}
	}
	for _, idx := range byRow {
		slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(tasks[a].StartNs, tasks[b].StartNs) })
	}

	height := ganttTop + len(rows)*(ganttRowH+ganttRowGap) + ganttAxisH + 44
	width := ganttLabel + W + 20
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="gantt" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="Gantt chart of the step">`, width, height, width, height)
	b.WriteString("\n")
	x0 := ganttLabel
	for i, r := range rows {
		y := ganttTop + i*(ganttRowH+ganttRowGap)
		if i == 0 || rows[i-1].rank != r.rank {
			fmt.Fprintf(&b, `<line x1="0" x2="%d" y1="%d" y2="%d" class="sep"/>`, width, y-1, y-1)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="lbl">rank %d %s</text>`, x0-6, y+ganttRowH-3, r.rank, esc(r.stream))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" class="lane"/>`, x0, y, W, ganttRowH)
		// Runs of pixels whose dominant kind is the same.
		for p := 0; p < W; {
			k := dominant(cover[i][p*K : (p+1)*K])
			if k < 0 {
				p++
				continue
			}
			q := p + 1
			for q < W && dominant(cover[i][q*K:(q+1)*K]) == k {
				q++
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s</title></rect>`,
				x0+p, y, q-p, ganttRowH, colors[kinds[k]], esc(runTitle(tasks, byRow[i], kinds[k], t0, span, p, q)))
			p = q
		}
		b.WriteString("\n")
	}
	// Time axis.
	ya := ganttTop + len(rows)*(ganttRowH+ganttRowGap) + 4
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" class="axis"/>`, x0, x0+W, ya, ya)
	ax := axis{lo: 0, hi: span, p0: float64(x0), p1: float64(x0 + W)}
	for _, v := range linearTicks(0, span, 8) {
		px := ax.pos(v)
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%d" y2="%d" class="axis"/><text x="%s" y="%d" class="tick">%s</text>`,
			num(px), num(px), ya, ya+4, num(px), ya+16, esc(tickSeconds(v/1e9)))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="axlbl">simulated time from the step's first task</text>`, x0+W/2, ya+32)
	names := make([][2]string, len(kinds))
	for i, k := range kinds {
		names[i] = [2]string{k, colors[k]}
	}
	legendSVG(&b, x0, ya+44, names)
	b.WriteString("</svg>")
	return b.String()
}

// dominant is the index of the largest positive entry, or -1.
func dominant(cov []float64) int {
	k, m := -1, 0.0
	for i, c := range cov {
		if c > m {
			k, m = i, c
		}
	}
	return k
}

// runTitle is the tooltip of the rectangle over pixels [p, q) of a row
// whose tasks are idx (by start time): the task when it is the only one,
// else the kind, the time span, how many tasks it covers and the first few
// names of that kind.
func runTitle(tasks []output.TimelineRow, idx []int32, kind string, t0 int64, span float64, p, q int) string {
	from := t0 + int64(float64(p)/ganttWidth*span)
	to := t0 + int64(math.Ceil(float64(q)/ganttWidth*span))
	lo, _ := slices.BinarySearchFunc(idx, from, func(ti int32, t int64) int { return cmp.Compare(tasks[ti].EndNs, t+1) })
	hi, _ := slices.BinarySearchFunc(idx, to, func(ti int32, t int64) int { return cmp.Compare(tasks[ti].StartNs, t) })
	in := idx[lo:max(lo, hi)]
	if len(in) == 1 {
		task := &tasks[in[0]]
		s := fmt.Sprintf("%s %s: %s, %s … %s", task.Kind, task.Name, fmtNs(task.EndNs-task.StartNs), fmtNs(task.StartNs-t0), fmtNs(task.EndNs-t0))
		if task.Layer >= 0 {
			s += fmt.Sprintf(", layer %d", task.Layer)
		}
		if task.Microbatch >= 0 {
			s += fmt.Sprintf(", micro-batch %d", task.Microbatch)
		}
		return s
	}
	var names []string
	more := false
	for _, ti := range in {
		if tasks[ti].Kind != kind || slices.Contains(names, tasks[ti].Name) {
			continue
		}
		if len(names) == 3 {
			more = true
			break
		}
		names = append(names, tasks[ti].Name)
	}
	s := fmt.Sprintf("%s, %s … %s, %d tasks: %s", kind, fmtNs(from-t0), fmtNs(to-t0), len(in), strings.Join(names, ", "))
	if more {
		s += ", …"
	}
	return s
}

// legendSVG draws a row of colour swatches and their names at (x, y),
// wrapping before the chart's width.
func legendSVG(b *strings.Builder, x, y int, items [][2]string) {
	cx := x
	for _, it := range items {
		w := 16 + 7*len(it[0]) + 14
		if cx+w > x+ganttWidth && cx > x {
			cx, y = x, y+16
		}
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="11" height="11" fill="%s"/><text x="%d" y="%d" class="val">%s</text>`, cx, y, it[1], cx+15, y+10, esc(it[0]))
		cx += w
	}
}
