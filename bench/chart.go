package main

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// chartSeries is one set of bars: one ratio per test.
type chartSeries struct {
	label  string
	ratios []*float64 // nil: not measured (unsupported, failed, …)
	color  color.Color
}

// writeChart draws Cellar's throughput as a ratio to Redis per test, one
// bar per table (pipeline depth), with a line at 1.0 (parity). A test
// Cellar could not run shows "n/a" instead of a bar.
func writeChart(path string, res *results) error {
	var base *table
	for _, t := range res.Tables {
		if t.ID == "p1" || (base == nil && len(t.ID) > 1 && t.ID[0] == 'p') {
			base = t
		}
	}
	if base == nil {
		return fmt.Errorf("chart: no pipeline table")
	}
	var tests []string
	for _, r := range base.Rows {
		tests = append(tests, r.Test)
	}
	palette := []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	}
	var series []chartSeries
	for _, t := range res.Tables {
		if len(t.ID) < 2 || t.ID[0] != 'p' {
			continue
		}
		s := chartSeries{label: t.Title, color: palette[len(series)%len(palette)]}
		for _, name := range tests {
			var v *float64
			for _, r := range t.Rows {
				if r.Test == name {
					v = r.Ratio["cellar/redis"]
				}
			}
			s.ratios = append(s.ratios, v)
		}
		series = append(series, s)
	}

	p := plot.New()
	p.Title.Text = fmt.Sprintf("Cellar throughput ÷ Redis throughput (median of %d round(s), %s)", res.Rounds, res.Generated[:10])
	p.Y.Label.Text = "ratio to Redis (1.0 = parity); n/a = unsupported or failed"
	p.Y.Min = 0
	top := 1.2
	for _, s := range series {
		for _, v := range s.ratios {
			if v != nil {
				top = math.Max(top, *v*1.15)
			}
		}
	}
	p.Y.Max = top
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.Legend.Top = true
	p.Add(plotter.NewGrid())

	width := vg.Points(14)
	n := float64(len(series))
	for i, s := range series {
		vals := make(plotter.Values, len(s.ratios))
		var missing plotter.XYLabels
		for k, v := range s.ratios {
			if v != nil {
				vals[k] = *v
			} else {
				missing.XYs = append(missing.XYs, plotter.XY{X: float64(k), Y: 0})
				missing.Labels = append(missing.Labels, "n/a")
			}
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return err
		}
		bars.Offset = vg.Length(float64(i)-(n-1)/2) * width
		bars.Color = s.color
		bars.LineStyle.Width = 0
		p.Add(bars)
		p.Legend.Add(s.label, bars)
		var vl plotter.XYLabels
		for k, v := range s.ratios {
			if v != nil {
				vl.XYs = append(vl.XYs, plotter.XY{X: float64(k), Y: *v})
				vl.Labels = append(vl.Labels, fmt.Sprintf("%.2f", *v))
			}
		}
		if len(vl.XYs) > 0 {
			lab, err := plotter.NewLabels(vl)
			if err != nil {
				return err
			}
			lab.Offset = vg.Point{X: bars.Offset - vg.Points(3), Y: vg.Points(2)}
			for k := range lab.TextStyle {
				lab.TextStyle[k].Rotation = math.Pi / 2
				lab.TextStyle[k].Font.Size = vg.Points(7)
			}
			p.Add(lab)
		}
		if len(missing.XYs) > 0 {
			lab, err := plotter.NewLabels(missing)
			if err != nil {
				return err
			}
			lab.Offset = vg.Point{X: bars.Offset - vg.Points(3), Y: vg.Points(3)}
			for k := range lab.TextStyle {
				lab.TextStyle[k].Rotation = math.Pi / 2
				lab.TextStyle[k].Color = color.Gray{Y: 0x60}
				lab.TextStyle[k].Font.Size = vg.Points(8)
			}
			p.Add(lab)
		}
	}
	parity := plotter.NewFunction(func(float64) float64 { return 1 })
	parity.Color = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	parity.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	parity.Width = vg.Points(1)
	p.Add(parity)
	p.Legend.Add("parity with Redis", parity)
	p.NominalX(tests...)
	return p.Save(11*vg.Inch, 5.5*vg.Inch, path)
}
