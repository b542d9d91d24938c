package main

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/simtrain/simtrain/sim/validation"
)

// scatterSVG draws predicted against measured step time on log-log axes,
// one colour and marker per source group, with the y = x line and the ±10%
// band (y = 0.9x to 1.1x). The output depends only on the rows.
func scatterSVG(rows []validation.Case, sum validation.Summary) ([]byte, error) {
	p := plot.New()
	a := sum.All
	p.Title.Text = fmt.Sprintf("simtrain validate: %d runs, MAPE %.1f%%, median %.1f%%, worst %.1f%%",
		a.Simulated, 100*a.MAPE, 100*a.Median, 100*a.Worst)
	p.X.Label.Text = "measured step time (s)"
	p.Y.Label.Text = "simulated step time (s)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true

	lo, hi := math.Inf(1), math.Inf(-1)
	byGroup := map[string]plotter.XYs{}
	for _, v := range rows {
		if v.Err != nil {
			continue
		}
		x, y := v.Comparison.MeasuredStepTimeS, v.Comparison.PredictedStepTimeS
		lo, hi = math.Min(lo, math.Min(x, y)), math.Max(hi, math.Max(x, y))
		byGroup[v.Group] = append(byGroup[v.Group], plotter.XY{X: x, Y: y})
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0.1, 10
	}
	lo, hi = lo/1.5, hi*1.5

	band, err := plotter.NewPolygon(plotter.XYs{{X: lo, Y: 0.9 * lo}, {X: hi, Y: 0.9 * hi}, {X: hi, Y: 1.1 * hi}, {X: lo, Y: 1.1 * lo}})
	if err != nil {
		return nil, err
	}
	band.Color = color.RGBA{R: 200, G: 220, B: 240, A: 255}
	band.LineStyle.Width = 0
	p.Add(band)
	p.Legend.Add("±10%", band)
	ideal, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
	if err != nil {
		return nil, err
	}
	ideal.Color = color.Gray{Y: 80}
	ideal.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(ideal)
	p.Legend.Add("y = x", ideal)

	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	for i, g := range groups {
		sc, err := plotter.NewScatter(byGroup[g])
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: plotutil.Color(i), Shape: plotutil.Shape(i), Radius: vg.Points(2.5)}
		p.Add(sc)
		p.Legend.Add(g, sc)
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi

	wt, err := p.WriterTo(7*vg.Inch, 7*vg.Inch, "svg")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
