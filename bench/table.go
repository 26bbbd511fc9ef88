package main

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// part is a piece of a mode's output: text, or a table in Markdown.
type part struct {
	table bool
	text  string
}

// capture is a mode's stdout under -report, its newTable tables in
// Markdown. It is not safe for concurrent use.
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

// withoutLine returns the parts without the lines equal to line, text
// trimmed of blank lines, empty parts dropped.
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

// tableWriter takes a table, cells ended by tabs, the first row the header.
type tableWriter interface {
	io.Writer
	Flush() error
}

var (
	_ tableWriter = (*tabwriter.Writer)(nil)
	_ tableWriter = (*mdTable)(nil)
)

// newTable writes aligned columns to w, or Markdown to -report's capture.
func newTable(w io.Writer) tableWriter {
	if c, ok := w.(*capture); ok {
		return &mdTable{c: c}
	}
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// mdTable is a Markdown table, added to its capture by Flush.
type mdTable struct {
	c   *capture
	buf bytes.Buffer
}

func (t *mdTable) Write(p []byte) (int, error) { return t.buf.Write(p) }

// Flush adds the rows since the last Flush, as wide as the widest, "|" escaped.
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
