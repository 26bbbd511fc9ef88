package main

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart sizes: panels one above the other, the height of two at least.
const (
	chartWidth  = 22 * vg.Centimeter
	panelHeight = 12 * vg.Centimeter
)

// writeChart writes plots to path and says so, on stderr under -json.
func (e *env) writeChart(path string, stdout io.Writer, asJSON bool, plots ...*plot.Plot) error {
	if err := writeSVG(path, plots...); err != nil {
		return err
	}
	if asJSON {
		fmt.Fprintf(e.stderr, "wrote %s\n", path)
	} else {
		fmt.Fprintf(stdout, "\nwrote %s\n", path)
	}
	return nil
}

// writeSVG draws the plots one above the other, aligned, into path.
func writeSVG(path string, plots ...*plot.Plot) (err error) {
	defer func() { // gonum panics on what it cannot draw: not worth a crash
		if r := recover(); r != nil {
			err = fmt.Errorf("bench: drawing %s: %v", path, r)
		}
	}()
	if len(plots) == 0 {
		return fmt.Errorf("bench: drawing %s: nothing to draw", path)
	}
	c := vgsvg.New(chartWidth, panelHeight*vg.Length(max(2, len(plots))))
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3,
		PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 5, PadY: vg.Centimeter}
	grid := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		grid[i] = []*plot.Plot{p}
	}
	canvases := plot.Align(grid, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	_, err = c.WriteTo(f)
	if err = cmp.Or(err, f.Close()); err != nil {
		return errors.Join(fmt.Errorf("bench: writing %s: %w", path, err), os.Remove(path))
	}
	return nil
}

// newPlot returns a plot with a grid and the legend at the top left.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p
}

// useLogY makes the y axis logarithmic; every value on it must be positive.
func useLogY(p *plot.Plot) {
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
}

// positive clamps v to at least 1, for a log axis: 0 is drawn at 1.
func positive(v float64) float64 { return atLeast(v, 1) }

// atLeast clamps v to at least lo, for a log axis.
func atLeast(v, lo float64) float64 {
	if math.IsNaN(v) || v < lo {
		return lo
	}
	return v
}

// logTicks labels powers of ten (siLabel) and marks the multiples between.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= 0 || lo > hi {
		return nil
	}
	var ticks []plot.Tick
	for k := int(math.Floor(math.Log10(lo))); math.Pow10(k) <= hi*1.0001 && len(ticks) < 200; k++ {
		v := math.Pow10(k)
		for i := 1; i < 10; i++ {
			x := v * float64(i)
			if x < lo || x > hi*1.0001 {
				continue
			}
			t := plot.Tick{Value: x}
			if i == 1 {
				t.Label = siLabel(x)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// headroom raises p's y axis so that a legend of entries lines (~4% of
// the panel each) covers no data. Call it after adding every series.
func headroom(p *plot.Plot, entries int) {
	frac := min(0.6, 0.03+0.04*float64(entries))
	lo, hi := p.Y.Min, p.Y.Max
	if _, log := p.Y.Scale.(plot.LogScale); log && lo > 0 && hi > 0 {
		if hi <= lo { // one value: gonum would widen it by ±1, below 0
			lo, hi = lo/10, hi*10
		}
		l, h := math.Log(lo), math.Log(hi)
		p.Y.Min, p.Y.Max = lo, math.Exp(l+(h-l)/(1-frac))
		return
	}
	if hi <= lo {
		lo, hi = lo-1, hi+1
	}
	p.Y.Min, p.Y.Max = lo, lo+(hi-lo)/(1-frac)
}

// stepTicks labels a linear axis every 1, 2 or 5 × 10^k, at most 13 ticks.
type stepTicks struct{}

func (stepTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	step := math.Pow(10, math.Floor(math.Log10((hi-lo)/12)))
	for _, m := range []float64{1, 2, 5, 10} {
		if (hi-lo)/(step*m) <= 12 {
			step *= m
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9 && len(ticks) < 14; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	return ticks
}

// siLabel formats v with an SI suffix: 1, 100, 7.5k, 1.5M.
func siLabel(v float64) string {
	for i, suffix := range []string{"G", "M", "k"} {
		if f := math.Pow10(9 - 3*i); v >= f {
			return strconv.FormatFloat(v/f, 'f', -1, 64) + suffix
		}
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// addLine adds a line in the i-th colour, with the i-th shape unless dashed.
func addLine(p *plot.Plot, name string, i int, dashed bool, xys plotter.XYs) error {
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("bench: series %s: %w", name, err)
	}
	l.Color, l.Width = plotutil.Color(i), vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(name, l)
		return nil
	}
	s.Color, s.Shape = plotutil.Color(i), plotutil.Shape(i)
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}

// marker is a labelled vertical line at x: an event on a time axis.
type marker struct {
	x     float64
	label string
	color color.Color
	row   int // the label's line from the top, so that close markers' labels do not overlap
}

var _ plot.Plotter = marker{}

func (m marker) style() draw.LineStyle {
	return draw.LineStyle{Color: m.color, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
}

func (m marker) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(m.x)
	if !c.ContainsX(x) {
		return
	}
	c.StrokeLine2(m.style(), x, c.Min.Y, x, c.Max.Y)
	sty := p.X.Tick.Label
	sty.Color, sty.XAlign, sty.YAlign = m.color, draw.XLeft, draw.YTop
	y := c.Max.Y - vg.Points(3) - vg.Length(m.row)*sty.Height(m.label)*1.2
	c.FillText(sty, vg.Point{X: x + vg.Points(3), Y: y}, m.label)
}

// Thumbnail draws the marker in the legend.
func (m marker) Thumbnail(c *draw.Canvas) {
	x := (c.Min.X + c.Max.X) / 2
	c.StrokeLine2(m.style(), x, c.Min.Y, x, c.Max.Y)
}
