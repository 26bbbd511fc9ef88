package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// report writes results as an aligned table, written out by flush, or as
// one JSON object per line, written as each result arrives.
type report struct {
	json  bool
	sweep bool // the table has the lease columns
	enc   *json.Encoder
	tw    *tabwriter.Writer
	rows  int
	done  bool // flushed
}

func newReport(w io.Writer, asJSON, sweep bool) *report {
	if asJSON {
		return &report{json: true, enc: json.NewEncoder(w)}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if sweep {
		fmt.Fprintln(tw, "workload\tsystem\tlease\tdecisions/s\tp50\tp99\tredis calls/decision\tadmitted/ideal\tlease units max\tbound\tsources")
	} else {
		fmt.Fprintln(tw, "workload\tsystem\tdecisions/s\tp50\tp99\tredis calls/decision\tadmitted/ideal\tsources")
	}
	return &report{tw: tw, sweep: sweep}
}

func (r *report) add(res result) error {
	if r.json {
		return r.enc.Encode(res)
	}
	r.rows++
	var err error
	if r.sweep {
		lease, units, bound := leaseLabel(res.LeaseFraction), "-", "-"
		if res.System == sysRedisRate {
			lease = "-"
		}
		if res.LeaseFraction > 0 {
			units = strconv.FormatInt(res.LeaseUnitsMax, 10)
			bound = fmt.Sprintf("+%.2f%%", res.LeaseBoundPct)
		}
		_, err = fmt.Fprintf(r.tw, "%s\t%s\t%s\t%.0f\t%s\t%s\t%.3f\t%.1f%%\t%s\t%s\t%s\n",
			res.Workload, res.System, lease, res.DecisionsPerSec, latency(res.P50us), latency(res.P99us),
			res.RedisCallsPerDecision, res.AdmittedPctOfIdeal, units, bound, sourceMix(res.Sources))
	} else {
		_, err = fmt.Fprintf(r.tw, "%s\t%s\t%.0f\t%s\t%s\t%.3f\t%.1f%%\t%s\n",
			res.Workload, res.System, res.DecisionsPerSec, latency(res.P50us), latency(res.P99us),
			res.RedisCallsPerDecision, res.AdmittedPctOfIdeal, sourceMix(res.Sources))
	}
	return err
}

// flush writes the table, once; it does nothing for JSON.
func (r *report) flush() error {
	if r.json || r.rows == 0 || r.done {
		return nil
	}
	r.done = true
	return r.tw.Flush()
}

// leaseLabel names a Lease.MaxFraction: "off" for 0, else a percentage
// of the limit, "0.25%".
func leaseLabel(f float64) string {
	if f == 0 {
		return "off"
	}
	return strconv.FormatFloat(100*f, 'f', -1, 64) + "%"
}

// latency formats microseconds with three significant figures or so:
// "8.42µs", "85µs", "1.27ms".
func latency(us float64) string {
	switch {
	case us < 10:
		return fmt.Sprintf("%.2fµs", us)
	case us < 1000:
		return fmt.Sprintf("%.0fµs", us)
	default:
		return fmt.Sprintf("%.2fms", us/1000)
	}
}

// sourceNames lists hybrid's Source names in Source order.
func sourceNames() []string {
	var names []string
	for src := hybrid.SourceRemote; int(src) < numSources; src++ {
		names = append(names, src.String())
	}
	return names
}

// sourceMix formats decisions by source as shares, in Source order, for
// example "remote 93% deny-cache 7%".
func sourceMix(sources map[string]int64) string {
	var total int64
	for _, n := range sources {
		total += n
	}
	if total == 0 {
		return "-"
	}
	var parts []string
	for _, src := range sourceNames() {
		n := sources[src]
		switch pct := 100 * float64(n) / float64(total); {
		case n == 0:
		case pct < 1:
			parts = append(parts, fmt.Sprintf("%s <1%%", src))
		default:
			parts = append(parts, fmt.Sprintf("%s %.0f%%", src, pct))
		}
	}
	return strings.Join(parts, " ")
}
