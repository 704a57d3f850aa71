package report

import (
	"fmt"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
)

// give says how a column of a terminal table gives way when Options.Width is narrower than
// the table. A table first drops columns, lowest drop rank first, then wraps the wrappable
// ones, widest first, down to their minimum. Only what another column also says is dropped
// (a group's G next to its lag; MM2's checkpoint next to the status that judges it), and a
// count column only when it is zero in every row: no table hides a difference to fit.
type give struct {
	drop     int  // 0: never dropped; 1, 2, …: the order in which columns go
	zeroOnly bool // dropped only when every cell is empty, "0" or "-"
	wrap     int  // >0: may be wrapped down to this many cells
}

// fitTable is a terminal table drawn within a width: header, rows, footer, go-pretty's column
// configs, and how each column (in header order) gives way.
type fitTable struct {
	header table.Row
	rows   []table.Row
	footer table.Row
	cfg    []table.ColumnConfig
	give   []give
}

// render draws the table, within width cells when width > 0, and says under it which columns
// it hid and wrapped (--wide shows them). width <= 0 draws every column unwrapped, as a file or
// a pipe gets it.
func (ft *fitTable) render(tw table.Writer, width int) string {
	cfg := map[int]table.ColumnConfig{}
	for _, c := range ft.cfg {
		cfg[c.Number] = c
	}
	var hidden, wrapped []string
	if width > 0 {
		widths, words := ft.widths(cfg)
		hidden = ft.hideColumns(cfg, widths, width)
		wrapped = ft.wrapColumns(cfg, widths, words, width)
	}
	tw.AppendHeader(ft.header)
	for _, r := range ft.rows {
		tw.AppendRow(r)
	}
	if ft.footer != nil {
		tw.AppendFooter(ft.footer)
	}
	var cc []table.ColumnConfig
	for n := 1; n <= len(ft.header); n++ {
		if c, ok := cfg[n]; ok {
			c.Number = n
			cc = append(cc, c)
		}
	}
	tw.SetColumnConfigs(cc)
	s := tw.Render()
	if len(hidden)+len(wrapped) > 0 {
		var what []string
		if len(hidden) > 0 {
			what = append(what, "hid "+strings.Join(hidden, ", "))
		}
		if len(wrapped) > 0 {
			what = append(what, "wrapped "+strings.Join(wrapped, ", "))
		}
		s += fmt.Sprintf("\n(%s to fit %d columns; --wide shows the full table)", strings.Join(what, "; "), width)
	}
	return s
}

// drawnWidth is the width in cells of the table with the columns of widths that cfg does not hide.
func drawnWidth(cfg map[int]table.ColumnConfig, widths []int) int {
	t := 1
	for i, w := range widths {
		if !cfg[i+1].Hidden {
			t += w + 3 // "│ " cell " "
		}
	}
	return t
}

// hideColumns hides in cfg, drop rank by drop rank, the columns that may go until the table fits width, and returns their headers.
func (ft *fitTable) hideColumns(cfg map[int]table.ColumnConfig, widths []int, width int) []string {
	var hidden []string
	for rank := 1; drawnWidth(cfg, widths) > width; rank++ {
		found := false
		for i, g := range ft.give {
			if g.drop < rank {
				continue
			}
			found = true
			if g.drop == rank && (!g.zeroOnly || ft.allZero(i)) {
				c := cfg[i+1]
				c.Number, c.Hidden = i+1, true
				cfg[i+1] = c
				hidden = append(hidden, fmt.Sprint(ft.header[i]))
			}
		}
		if !found {
			break
		}
	}
	return hidden
}

// wrapColumns narrows in widths and cfg the widest wrappable shown column, one cell at a time, until the table fits width, and returns the wrapped columns' headers.
func (ft *fitTable) wrapColumns(cfg map[int]table.ColumnConfig, widths, words []int, width int) []string {
	var wrapped []string
	over := drawnWidth(cfg, widths) - width
	shrunk := map[int]bool{}
	for ; over > 0; over-- {
		best := -1
		for i, g := range ft.give {
			if g.wrap > 0 && !cfg[i+1].Hidden && widths[i] > max(g.wrap, words[i]) && (best < 0 || widths[i] > widths[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		widths[best]--
		shrunk[best] = true
	}
	for i := range ft.give {
		if shrunk[i] {
			c := cfg[i+1]
			c.Number, c.WidthMax, c.WidthMaxEnforcer = i+1, widths[i], text.WrapSoft
			cfg[i+1] = c
			wrapped = append(wrapped, fmt.Sprint(ft.header[i]))
		}
	}
	return wrapped
}

// widths is the width of each column as drawn unwrapped (within a WidthMax already set), and
// its longest word, which wrapping does not cut.
func (ft *fitTable) widths(cfg map[int]table.ColumnConfig) (w, words []int) {
	w, words = make([]int, len(ft.header)), make([]int, len(ft.header))
	measure := func(r table.Row) {
		for i, cell := range r {
			if i >= len(w) {
				break
			}
			s := fmt.Sprint(cell)
			for _, line := range strings.Split(s, "\n") {
				w[i] = max(w[i], text.RuneWidthWithoutEscSequences(line))
			}
			for _, word := range strings.Fields(s) {
				words[i] = max(words[i], text.RuneWidthWithoutEscSequences(word))
			}
		}
	}
	measure(ft.header)
	for _, r := range ft.rows {
		measure(r)
	}
	measure(ft.footer)
	for i := range w {
		if m := cfg[i+1].WidthMax; m > 0 && w[i] > m {
			w[i] = m
		}
	}
	return w, words
}

func (ft *fitTable) allZero(col int) bool {
	rows := append(append([]table.Row(nil), ft.rows...), ft.footer)
	for _, r := range rows {
		if col >= len(r) {
			continue
		}
		switch strings.TrimSpace(text.StripEscape(fmt.Sprint(r[col]))) {
		case "", "0", "-":
		default:
			return false
		}
	}
	return true
}
