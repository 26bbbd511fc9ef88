package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// report writes results as an aligned table, written out by flush, or as
// one JSON object per line, written as each result arrives.
type report struct {
	json  bool
	sweep bool // the table has the lease columns
	enc   *json.Encoder
	tw    tableWriter
	rows  int
	done  bool // flushed
	w     io.Writer
	all   []result // for the capacity lines
}

func newReport(w io.Writer, asJSON, sweep bool) *report {
	if asJSON {
		return &report{json: true, enc: json.NewEncoder(w), w: w}
	}
	tw := newTable(w)
	if sweep {
		fmt.Fprintln(tw, "workload\tsystem\tlease\tdecisions/s\tp50\tp99\tredis calls/decision\tadmitted/ideal\tlease units max\tbound\tsources")
	} else {
		fmt.Fprintln(tw, "workload\tsystem\tdecisions/s\tp50\tp99\tredis calls/decision\tcpu/decision client+redis\tadmitted/ideal\tsources")
	}
	return &report{tw: tw, sweep: sweep, w: w}
}

func (r *report) add(res result) error {
	if r.json {
		return r.enc.Encode(res)
	}
	r.rows++
	r.all = append(r.all, res)
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
		_, err = fmt.Fprintf(r.tw, "%s\t%s\t%.0f\t%s\t%s\t%.3f\t%s\t%.1f%%\t%s\n",
			res.Workload, res.System, res.DecisionsPerSec, latency(res.P50us), latency(res.P99us),
			res.RedisCallsPerDecision, cpuLabel(res.ClientCPUus, res.RedisCPUus), res.AdmittedPctOfIdeal, sourceMix(res.Sources))
	}
	return err
}

// flush writes the table, once; it does nothing for JSON.
func (r *report) flush() error {
	if r.json || r.rows == 0 || r.done {
		return nil
	}
	r.done = true
	if err := r.tw.Flush(); err != nil {
		return err
	}
	if r.sweep {
		return nil
	}
	return writeCapacity(r.w, r.all)
}

// cpuLabel is a CPU time per decision of the client and of Redis,
// "3.1+5.2µs"; the Redis part is "?" when redis is nil: on miniredis,
// which runs in this process (its CPU is in the client's).
func cpuLabel(client float64, redis *float64) string {
	if redis == nil {
		return fmt.Sprintf("%.2f+?µs", client)
	}
	return fmt.Sprintf("%.2f+%.2fµs", client, *redis)
}

// writeCapacity writes, per workload, the cores each system would need
// for targetRate decisions per second at the CPU per decision measured:
// the figure that scales to a fleet.
func writeCapacity(w io.Writer, all []result) error {
	var order []string
	by := map[string][]result{}
	for _, res := range all {
		if res.Decisions == 0 {
			continue
		}
		if _, ok := by[res.Workload]; !ok {
			order = append(order, res.Workload)
		}
		by[res.Workload] = append(by[res.Workload], res)
	}
	if len(order) == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, "\ncores for %d decisions/s at the CPU per decision measured (client + Redis):\n", targetRate); err != nil {
		return err
	}
	for _, wl := range order {
		var parts []string
		for _, res := range by[wl] {
			redis := "?"
			if res.RedisCPUus != nil {
				redis = fmt.Sprintf("%.1f", cores(*res.RedisCPUus))
			}
			parts = append(parts, fmt.Sprintf("%s %.1f + %s", res.System, cores(res.ClientCPUus), redis))
		}
		if _, err := fmt.Fprintf(w, "  %-10s %s\n", wl, strings.Join(parts, "; ")); err != nil {
			return err
		}
	}
	return nil
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
