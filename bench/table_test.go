package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestCapture: text and tables written to a capture come out in order,
// a table as Markdown whatever its cells hold, and withoutLine drops the
// line asked for and the blank lines around the text.
func TestCapture(t *testing.T) {
	var c capture
	fmt.Fprintf(&c, "nodes: 3\n\n")
	tw := newTable(&c)
	fmt.Fprintln(tw, "t\tsources\tevent")
	fmt.Fprintln(tw, "0.0s\tremote 93% deny-cache <1%\tkill a|b")
	fmt.Fprintln(tw, "1.0s\t-") // short: padded to the header's width
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&c, "\nfault: kill\n\nwrote /tmp/x.svg\n")
	got := c.withoutLine("wrote /tmp/x.svg")
	want := []part{
		{text: "nodes: 3"},
		{table: true, text: strings.Join([]string{
			"| t | sources | event |",
			"|---|---|---|",
			"| 0.0s | remote 93% deny-cache <1% | kill a\\|b |",
			"| 1.0s | - |  |",
		}, "\n") + "\n"},
		{text: "fault: kill"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("capture parts =\n%+v\nwant\n%+v", got, want)
	}
}

// TestNewTableAligned: on any other writer newTable aligns columns, as
// the modes always printed them.
func TestNewTableAligned(t *testing.T) {
	var b strings.Builder
	tw := newTable(&b)
	fmt.Fprintln(tw, "workload\tsystem")
	fmt.Fprintln(tw, "hot\thybridlimit")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "workload  system\nhot       hybridlimit\n"; b.String() != want {
		t.Errorf("newTable on a strings.Builder wrote %q, want %q", b.String(), want)
	}
}
