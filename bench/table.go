package main

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// A mode writes its table through newTable: aligned columns on a
// terminal or a file, or, when its stdout is -report's capture, a
// Markdown table that the capture keeps between the mode's other lines.

// part is a piece of a mode's output: text, or a table in Markdown.
type part struct {
	table bool
	text  string
}

// capture is a mode's stdout under -report: text as it comes, and the
// tables the mode writes through newTable, as Markdown tables, in order.
// It is not safe for concurrent use; the modes write from one goroutine.
type capture struct {
	parts []part
}

func (c *capture) Write(p []byte) (int, error) {
	if n := len(c.parts); n > 0 && !c.parts[n-1].table {
		c.parts[n-1].text += string(p)
	} else {
		c.parts = append(c.parts, part{text: string(p)})
	}
	return len(p), nil
}

// withoutLine returns the parts without the text lines equal to line and
// without blank lines around the text; parts left empty are dropped.
func (c *capture) withoutLine(line string) []part {
	var out []part
	for _, p := range c.parts {
		if !p.table {
			lines := slices.DeleteFunc(strings.Split(p.text, "\n"), func(l string) bool { return l == line })
			p.text = strings.Trim(strings.Join(lines, "\n"), "\n")
			if p.text == "" {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// tableWriter is what a mode writes a table to, cells ended by tabs and
// rows by newlines, the first row the header, and flushes once.
type tableWriter interface {
	io.Writer
	Flush() error
}

var (
	_ tableWriter = (*tabwriter.Writer)(nil)
	_ tableWriter = (*mdTable)(nil)
)

// newTable returns the writer of a mode's table on w: aligned columns, or
// a Markdown table when w is -report's capture.
func newTable(w io.Writer) tableWriter {
	if c, ok := w.(*capture); ok {
		return &mdTable{c: c}
	}
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// mdTable turns the rows written to it into a Markdown table, added to
// its capture by Flush.
type mdTable struct {
	c   *capture
	buf bytes.Buffer
}

func (t *mdTable) Write(p []byte) (int, error) { return t.buf.Write(p) }

// Flush adds the rows written since the last Flush as a table: the first
// row the header, every row as wide as the widest, "|" escaped.
func (t *mdTable) Flush() error {
	text := strings.TrimRight(t.buf.String(), "\n")
	t.buf.Reset()
	if text == "" {
		return nil
	}
	var rows [][]string
	width := 0
	for line := range strings.SplitSeq(text, "\n") {
		cells := strings.Split(line, "\t")
		width = max(width, len(cells))
		rows = append(rows, cells)
	}
	var b strings.Builder
	for i, cells := range rows {
		for j := range width {
			cell := ""
			if j < len(cells) {
				cell = strings.ReplaceAll(strings.TrimSpace(cells[j]), "|", `\|`)
			}
			b.WriteString("| " + cell + " ")
		}
		b.WriteString("|\n")
		if i == 0 {
			b.WriteString(strings.Repeat("|---", width) + "|\n")
		}
	}
	t.c.parts = append(t.c.parts, part{table: true, text: b.String()})
	return nil
}
