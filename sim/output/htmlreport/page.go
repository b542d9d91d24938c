package htmlreport

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/simtrain/simtrain/sim/output"
)

// pageStyle styles the page around the charts; chartStyle styles the
// charts (also embedded by [Standalone]). Inline: the page loads nothing.
const pageStyle = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1200px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 32px; border-bottom: 1px solid #ddd; }
p.sub { color: #555; margin-top: 0; } .note { color: #666; font-size: 13px; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
td, th { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: left; }
td.n, th.n { text-align: right; }
table.sortable th { cursor: pointer; user-select: none; } table.sortable th:hover { background: #f3f3f3; }
table.kv th { font-weight: normal; color: #555; }
.bad { color: #b00020; font-weight: 600; }
.scroll { overflow-x: auto; }
svg.chart { display: block; }
`

const chartStyle = `
svg.chart { font: 11px system-ui, -apple-system, "Segoe UI", sans-serif; }
svg .lbl { text-anchor: end; fill: #333; } svg .val { fill: #333; } svg .kind { font-weight: 600; fill: #333; }
svg .tick { text-anchor: middle; fill: #555; } svg .axlbl { text-anchor: middle; fill: #333; font-size: 12px; }
svg .axis { stroke: #888; } svg .sep { stroke: #ddd; } svg .lane { fill: #f7f7f7; }
svg .grid { stroke: #eee; } svg .frame { fill: none; stroke: #ccc; }
svg .cap { stroke: #222; stroke-dasharray: 3 2; stroke-width: 1.5; }
svg .pt { fill: #4e79a7; fill-opacity: .55; } svg .pt.nofit { fill: none; stroke: #aaa; }
svg .pt.best { fill: #d62728; fill-opacity: 1; } svg .front { fill: none; stroke: #d62728; stroke-width: 1.5; }
`

// Standalone turns a chart of this package into an SVG file of its own for
// documents: the chart styles embedded, a white background (for viewers in
// dark mode), and no tooltips (an SVG shown as an image is not interactive,
// and they are most of its bytes).
func Standalone(svg string) string {
	i := strings.Index(svg, ">")
	if i < 0 {
		return svg
	}
	body := titleElement().ReplaceAllString(svg[i+1:], "")
	return svg[:i+1] + "\n<style>" + chartStyle + "</style>\n" + `<rect width="100%" height="100%" fill="#fff"/>` + body + "\n"
}

// titleElement matches a tooltip (the charts escape their text, so a title
// holds no "<"). Compiled on first use, like page: every simtrain command
// links this package, and a sweep or a run never renders a chart.
var titleElement = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<title>[^<]*</title>`) })

// script makes tables with class "sortable" sort by a click on a header
// (numbers by the cell's data-v, text otherwise). It is all the page runs.
const script = `
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var dir = th.dataset.dir === "asc" ? -1 : 1;
      th.dataset.dir = dir === 1 ? "asc" : "desc";
      rows.sort(function (a, b) {
        var x = a.cells[col], y = b.cells[col];
        var vx = x.dataset.v, vy = y.dataset.v;
        if (vx !== undefined && vy !== undefined) return dir * (parseFloat(vx) - parseFloat(vy));
        return dir * x.textContent.localeCompare(y.textContent);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
`

// page is the report's HTML template, parsed on first use rather than at
// package initialisation: every simtrain command links this package and
// paid the parse (156 allocations, ≈ 0.07–0.09 ms by GODEBUG=inittrace=1)
// at each start, while only report and best render a page. Parsed from
// pageSource, the same text, so a page's bytes do not change
// (TestPageParsedOnFirstUse).
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(pageSource))
})

const pageSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} — simtrain report</title>
<style>{{.Style}}</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="sub">{{.Subtitle}}</p>
{{range .Sections}}<h2 id="s-{{.ID}}">{{.Heading}}</h2>
{{.Body}}
{{end}}<p class="note">Written by simtrain from the files in this directory. Self-contained: the page loads nothing from the network.</p>
<script>{{.Script}}</script>
</body>
</html>
`

type section struct {
	ID, Heading string
	Body        template.HTML
}

type pageData struct {
	Title, Subtitle string
	Sections        []section
	Style           template.CSS
	Script          template.JS
}

func render(w io.Writer, d pageData) error {
	d.Style, d.Script = template.CSS(pageStyle+chartStyle), template.JS(script)
	return page().Execute(w, d)
}

// kvTable renders rows of (label, value) pairs.
func kvTable(rows [][2]string) string {
	var b strings.Builder
	b.WriteString(`<table class="kv">`)
	for _, r := range rows {
		fmt.Fprintf(&b, "<tr><th>%s</th><td>%s</td></tr>\n", esc(r[0]), r[1])
	}
	b.WriteString("</table>")
	return b.String()
}

// RenderRun writes the HTML report of one run: summary, the Gantt chart of
// the step, memory per pipeline stage and the link-utilisation heatmap.
func RenderRun(w io.Writer, r *Run) error {
	s := &r.Summary
	exposed := []string{}
	for _, e := range []struct {
		k string
		v float64
	}{{"tp", s.ExposedTPS}, {"cp", s.ExposedCPS}, {"ep", s.ExposedEPS}, {"dp", s.ExposedDPS}, {"pp", s.ExposedPPS}} {
		if e.v > 0 {
			exposed = append(exposed, e.k+" "+fmtSeconds(e.v))
		}
	}
	if len(exposed) == 0 {
		exposed = []string{"none"}
	}
	fits := "fits"
	if !s.Fits {
		fits = `<span class="bad">does not fit</span>`
	}
	kv := [][2]string{
		{"model", esc(fmt.Sprintf("%s, %s parameters (%s active), %d layers, hidden %d", s.ModelPreset, sig(s.Params/1e9)+"B", sig(s.ActiveParams/1e9)+"B", s.Layers, s.Hidden))},
		{"cluster", esc(fmt.Sprintf("%d× %s (%d nodes × %d), %s intra-node, %s network", s.NumGPUs, s.GPU, s.Nodes, s.GPUsPerNode, s.IntraNode, s.Network))},
		{"layout", esc(layoutString(s.TP, s.PP, s.DP, s.CP, s.EP, s.Zero, s.Schedule) + fmt.Sprintf(", %d micro-batches of %d", s.Microbatches, s.MicroBatch))},
		{"training", esc(fmt.Sprintf("sequence %s, global batch %s, %s, %s optimizer, recompute %s", fmtCount(s.SeqLen), fmtCount(s.GlobalBatch), s.Precision, s.Optimizer, s.Recompute))},
		{"step time", esc(fmtSeconds(s.StepTimeS))},
		{"tokens/s", esc(fmt.Sprintf("%s (%s per GPU)", grouped(s.TokensPerS), grouped(s.TokensPerSPerGPU)))},
		{"MFU / HFU", esc(fmtPct(s.MFU) + " / " + fmtPct(s.HFU))},
		{"TFLOP/s per GPU", esc(sig(s.TFLOPsPerGPU))},
		{"compute (busiest rank)", esc(fmtSeconds(s.ComputeS))},
		{"pipeline bubble", esc(fmtPct(s.BubbleFraction))},
		{"exposed communication", esc(strings.Join(exposed, ", "))},
		{"peak memory per GPU", esc(fmtGB(float64(s.PeakMemBytes))+" of "+fmtGB(float64(s.MemCapacityBytes))+" (") + fits + ")"},
	}
	if s.CostUSDPerStep > 0 {
		kv = append(kv, [2]string{"cost per step", esc(fmtUSD(s.CostUSDPerStep))})
	}
	if s.EnergyKWhPerStep > 0 {
		kv = append(kv, [2]string{"energy per step", esc(sig(s.EnergyKWhPerStep) + " kWh")})
	}
	kv = append(kv, [2]string{"simulated", esc(fmt.Sprintf("%s fidelity, %s events, run id %s", s.Fidelity, fmtCount(s.Events), s.RunID))})

	d := pageData{
		Title:    s.Name,
		Subtitle: fmt.Sprintf("%d× %s · %s · step %s · MFU %s", s.NumGPUs, s.GPU, layoutString(s.TP, s.PP, s.DP, s.CP, s.EP, s.Zero, s.Schedule), fmtSeconds(s.StepTimeS), fmtPct(s.MFU)),
	}
	d.Sections = append(d.Sections, section{"summary", "Summary", template.HTML(kvTable(kv))})

	var g strings.Builder
	if t := r.Timeline; t != nil {
		fmt.Fprintf(&g, `<p class="note">Ranks %s (%d of the %d ranks in timeline.arrow), first of %d simulated steps; %s tasks drawn of %s in the file.`,
			esc(rankList(t.Ranks)), len(t.Ranks), t.FileRanks, max(t.Steps, 1), fmtCount(len(t.Tasks)), fmtCount(t.TotalTasks))
		if t.Symmetric {
			g.WriteString(` Every rank of a pipeline stage has its representative's task times (analytic fidelity).`)
		}
		g.WriteString(` Each pixel shows the kind of task that covers most of its time; hover for tasks and times.</p>`)
		g.WriteString(`<div class="scroll">` + GanttSVG(t) + `</div>`)
	} else {
		g.WriteString(`<p class="note">This run wrote no timeline (--no-timeline or sim.timeline: false).</p>`)
	}
	d.Sections = append(d.Sections, section{"gantt", "Step timeline", template.HTML(g.String())})
	d.Sections = append(d.Sections, section{"memory", "Memory per pipeline stage",
		template.HTML(`<div class="scroll">` + MemorySVG(r.Memory) + `</div>`)})
	links := `<p class="note">Bytes moved over each directed link divided by what it could move in the simulated steps.</p><div class="scroll">` + LinkHeatmapSVG(r.Links) + `</div>`
	if r.NoLinks {
		links = `<p class="note">This run wrote no links.arrow (sim.links: off, or auto on a cluster of more than 262,144 links; simtrain run --links full writes it).</p>`
	}
	d.Sections = append(d.Sections, section{"links", "Link utilisation", template.HTML(links)})
	return render(w, d)
}

// rankList compresses sorted ranks into "0-7,16".
func rankList(ranks []int) string {
	var parts []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ranks[i], ranks[j]))
		} else {
			parts = append(parts, fmt.Sprint(ranks[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// maxTableRows is the most points the sweep report lists in its table of
// every point (sorted fastest first); the Pareto plot draws them all.
const maxTableRows = 500

// RenderSweep writes the HTML report of a sweep: counts, the Pareto plot of
// step time against cost, the front and the fastest fitting layouts.
func RenderSweep(w io.Writer, sw *Sweep) error {
	rows := slices.Clone(sw.Rows)
	slices.SortFunc(rows, compareNames)
	sim := simulated(rows)
	fit := 0
	for _, r := range sim {
		if r.Fits {
			fit++
		}
	}
	title := sw.Name
	if title == "" {
		title = "sweep"
	}
	d := pageData{
		Title:    title,
		Subtitle: fmt.Sprintf("%s points · %s simulated · %s fit in memory · %s failed", fmtCount(len(rows)), fmtCount(len(sim)), fmtCount(fit), fmtCount(len(rows)-len(sim))),
	}
	xName, x := paretoX(sim)
	front := ParetoFront(sim, x)
	var p strings.Builder
	fmt.Fprintf(&p, `<p class="note">Every simulated layout's step time against its %s: filled if it fits in memory, hollow if not; red: the Pareto front of the layouts that fit (%d), which no other fitting layout beats on both.</p>`, esc(xName), len(front))
	p.WriteString(`<div class="scroll">` + ParetoSVG(rows) + `</div>`)
	d.Sections = append(d.Sections, section{"pareto", "Pareto front: step time against " + xName, template.HTML(p.String())})
	d.Sections = append(d.Sections, section{"front", "Layouts on the front", template.HTML(pointsTable(front, ""))})

	ranked := slices.Clone(sim)
	slices.SortStableFunc(ranked, func(a, b output.SummaryRow) int {
		return cmp.Or(-cmp.Compare(boolInt(a.Fits), boolInt(b.Fits)), cmp.Compare(a.StepTimeS, b.StepTimeS), compareNames(a, b))
	})
	note := ""
	if len(ranked) > maxTableRows {
		note = fmt.Sprintf(`<p class="note">The %d fastest of %s simulated layouts (fitting ones first); the merged summary file holds them all.</p>`, maxTableRows, fmtCount(len(ranked)))
		ranked = ranked[:maxTableRows]
	}
	d.Sections = append(d.Sections, section{"points", "Layouts, fastest first", template.HTML(note + pointsTable(ranked, "sortable"))})
	var failed []output.SummaryRow
	for _, r := range rows {
		if r.Error != "" {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		var f strings.Builder
		f.WriteString(`<table><thead><tr><th>point</th><th>error</th></tr></thead><tbody>`)
		for i, r := range failed {
			if i == maxTableRows {
				break
			}
			fmt.Fprintf(&f, "<tr><td>%s</td><td>%s</td></tr>\n", esc(r.Name), esc(r.Error))
		}
		f.WriteString("</tbody></table>")
		d.Sections = append(d.Sections, section{"failed", fmt.Sprintf("Points that did not simulate (%d)", len(failed)), template.HTML(f.String())})
	}
	return render(w, d)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pointsTable lists sweep points with their layout and results.
func pointsTable(rows []output.SummaryRow, class string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<div class="scroll"><table class="%s"><thead><tr><th>point</th><th>gpu</th><th class="n">GPUs</th><th class="n">tp</th><th class="n">pp</th><th class="n">dp</th><th class="n">cp</th><th class="n">ep</th><th class="n">zero</th><th class="n">micro-batch</th><th>schedule</th><th>recompute</th><th class="n">step time</th><th class="n">MFU</th><th class="n">peak memory</th><th>fits</th><th class="n">cost per step</th></tr></thead><tbody>`, class)
	b.WriteString("\n")
	for _, r := range rows {
		fits := "yes"
		if !r.Fits {
			fits = `<span class="bad">no</span>`
		}
		fmt.Fprintf(&b, `<tr><td>%s</td><td>%s</td><td class="n" data-v="%d">%s</td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td><td>%s</td><td>%s</td><td class="n" data-v="%g">%s</td><td class="n" data-v="%g">%s</td><td class="n" data-v="%d">%s</td><td>%s</td><td class="n" data-v="%g">%s</td></tr>`,
			esc(r.Name), esc(r.GPU), r.NumGPUs, grouped(float64(r.NumGPUs)), r.TP, r.PP, r.DP, r.CP, r.EP, r.Zero, r.MicroBatch, esc(r.Schedule), esc(r.Recompute),
			r.StepTimeS, fmtSeconds(r.StepTimeS), r.MFU, fmtPct(r.MFU), r.PeakMemBytes, fmtGB(float64(r.PeakMemBytes)), fits, r.CostUSDPerStep, fmtUSD(r.CostUSDPerStep))
		b.WriteString("\n")
	}
	b.WriteString("</tbody></table></div>")
	return b.String()
}
