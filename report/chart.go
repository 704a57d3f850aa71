package report

import (
	"fmt"
	"math"
	"sort"
)

// chart is a horizontal bar chart drawn as inline SVG: one row per partition (verify) or
// group partition (reconcile), each a few coloured segments. Geometry is computed here so the
// template only places numbers, and the page needs no script to show it.
type chart struct {
	Title   string
	Width   int
	Height  int
	Rows    []chartRow
	Legend  []chartLegend
	Axis    chartAxis
	Omitted int     // rows beyond the cap, still in the table
	Zero    int     // rows left out because all their values are zero
	Empty   string  // shown instead of the bars when every value is zero
	LabelX  float64 // right edge of the row labels
}

type chartRow struct {
	Y, LabelY, BarH float64
	Label           string
	Tip             string // hover text (an SVG <title>)
	Segs            []chartSeg
	Value           string
	ValueX          float64
}

type chartSeg struct {
	X, Y, W, H float64
	Class      string
}

type chartLegend struct {
	X     float64
	Class string
	Label string
}

type chartAxis struct {
	X0, X1, Y float64
	Ticks     []chartTick
}

type chartTick struct {
	X     float64
	Label string
}

// series names one kind of segment: its CSS class and legend label.
type series struct {
	Class, Label string
}

// chartInput is one row before layout: a value per series.
type chartInput struct {
	Label, Tip string
	Values     []int64
	// Stack draws the values end to end (verify's classes add up); otherwise each value gets
	// its own thin bar within the row (re-delivered and skipped are separate risks).
	Stack bool
}

const (
	chartWidth     = 760
	chartValueW    = 150 // room right of the longest bar for its value
	chartTop       = 30
	chartMaxRows   = 40
	chartMaxLabel  = 36  // characters; longer labels are cut, the hover text has them whole
	chartCharWidth = 6.4 // average advance of an 11px sans-serif character
)

// layoutChart lays out the rows of in as bars of the series ss under title; empty is the message shown when every value is zero.
func layoutChart(title string, ss []series, in []chartInput, empty string) *chart {
	c := &chart{Title: title, Width: chartWidth}
	in = c.selectRows(in)
	labelW := fitLabels(in)
	barW := chartWidth - labelW - chartValueW
	var peak int64
	for _, r := range in {
		peak = max(peak, r.extent())
	}
	x := 0.0
	for _, s := range ss {
		c.Legend = append(c.Legend, chartLegend{X: x, Class: s.Class, Label: s.Label})
		x += 24 + 7.2*float64(len([]rune(s.Label)))
	}
	rowH := 26.0
	if len(in) > 12 {
		rowH = 16
	}
	x0 := labelW
	c.LabelX = labelW - 8
	if peak == 0 {
		// Nothing to draw: the message says so, and the table lists every row.
		c.Empty = empty
		c.Axis = chartAxis{X0: x0, X1: x0 + barW, Y: chartTop + 20}
		c.Height = int(c.Axis.Y) + 8
		return c
	}
	scale := barW / float64(niceCeil(peak))
	for i, r := range in {
		c.Rows = append(c.Rows, layoutRow(r, ss, chartTop+float64(i)*rowH, rowH, x0, scale))
	}
	c.Axis = chartAxis{X0: x0, X1: x0 + barW, Y: chartTop + float64(len(in))*rowH + 2}
	top := niceCeil(peak)
	for i := int64(0); i <= 4; i++ {
		v := top * i / 4
		c.Axis.Ticks = append(c.Axis.Ticks, chartTick{X: x0 + float64(v)*scale, Label: num(v)})
	}
	c.Height = int(c.Axis.Y) + 22
	return c
}

// selectRows returns the rows of in the chart draws (those not all zero when there are many, at most chartMaxRows), noting in c what it leaves out.
func (c *chart) selectRows(in []chartInput) []chartInput {
	if len(in) > 12 {
		// Many rows: draw only those with something to show.
		var nonZero []chartInput
		for _, r := range in {
			if rowTotal(r) > 0 {
				nonZero = append(nonZero, r)
			}
		}
		if len(nonZero) > 0 {
			c.Zero = len(in) - len(nonZero)
			in = nonZero
		}
	}
	if len(in) > chartMaxRows {
		// Keep the rows with the largest values, in their original order: the chart is for
		// spotting where the problems are; the table lists every row.
		c.Omitted = len(in) - chartMaxRows
		idx := make([]int, len(in))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return rowTotal(in[idx[a]]) > rowTotal(in[idx[b]]) })
		keep := idx[:chartMaxRows]
		sort.Ints(keep)
		top := make([]chartInput, 0, chartMaxRows)
		for _, i := range keep {
			top = append(top, in[i])
		}
		in = top
		c.Title += fmt.Sprintf(" (the %d largest of %d)", chartMaxRows, chartMaxRows+c.Omitted)
	}
	return in
}

// fitLabels cuts the labels of in to chartMaxLabel characters and returns the width of the label column.
func fitLabels(in []chartInput) float64 {
	labelChars := 0
	for i := range in {
		if r := []rune(in[i].Label); len(r) > chartMaxLabel {
			in[i].Label = string(r[:chartMaxLabel-1]) + "…"
		}
		labelChars = max(labelChars, len([]rune(in[i].Label)))
	}
	return math.Max(60, float64(labelChars)*chartCharWidth+12)
}

// extent is the length of r's bar in values: their sum when stacked, else the largest.
func (r chartInput) extent() int64 {
	var sum int64
	for _, v := range r.Values {
		if r.Stack {
			sum += v
		} else {
			sum = max(sum, v)
		}
	}
	return sum
}

// layoutRow lays out r at height y, its bars starting at x0 with scale pixels per unit.
func layoutRow(r chartInput, ss []series, y, rowH, x0, scale float64) chartRow {
	row := chartRow{Y: y, LabelY: y + rowH/2 + 4, BarH: rowH - 6, Label: r.Label, Tip: r.Tip}
	var total int64
	sx := x0
	for si, v := range r.Values {
		if si >= len(ss) {
			break
		}
		if v <= 0 {
			continue
		}
		w := math.Max(2, float64(v)*scale)
		if r.Stack {
			row.Segs = append(row.Segs, chartSeg{X: sx, Y: y + 3, W: w, H: rowH - 6, Class: ss[si].Class})
			sx += w
			total += v
		} else {
			n := float64(len(r.Values))
			h := (rowH - 6) / n
			row.Segs = append(row.Segs, chartSeg{X: x0, Y: y + 3 + float64(si)*h, W: w, H: h, Class: ss[si].Class})
			sx = math.Max(sx, x0+w)
			total = max(total, v)
		}
	}
	row.Value = num(total)
	if !r.Stack {
		row.Value = ""
		for si, v := range r.Values {
			if v > 0 {
				if row.Value != "" {
					row.Value += ", "
				}
				row.Value += fmt.Sprintf("%s %s", num(v), ss[si].Label)
			}
		}
		if row.Value == "" {
			row.Value = "0"
		}
	}
	row.ValueX = sx + 6
	return row
}

func rowTotal(r chartInput) int64 {
	var t int64
	for _, v := range r.Values {
		t += v
	}
	return t
}

// niceCeil rounds n up to 1, 2, 2.5 or 5 times a power of ten, so axis ticks read well.
func niceCeil(n int64) int64 {
	if n <= 4 {
		return 4
	}
	p := int64(1)
	for p*10 <= n {
		p *= 10
	}
	for _, m := range []int64{1, 2, 4, 5, 8, 10} {
		if m*p >= n && (m*p)%4 == 0 {
			return m * p
		}
	}
	return 10 * p
}
