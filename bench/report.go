package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// report writes results as a table, by flush, or as JSON lines as they come.
type report struct {
	w     io.Writer
	json  bool
	sweep bool // the table has the lease columns
	all   []result
	done  bool // flushed
}

func newReport(w io.Writer, asJSON, sweep bool) *report {
	return &report{w: w, json: asJSON, sweep: sweep}
}

func (r *report) add(res result) error {
	if r.json {
		return json.NewEncoder(r.w).Encode(res)
	}
	r.all = append(r.all, res)
	return nil
}

// flush writes the table once and, for the comparison, the cores each
// system needs for targetRate decisions/s; it does nothing for JSON.
func (r *report) flush() error {
	if r.json || len(r.all) == 0 || r.done {
		return nil
	}
	r.done = true
	tw := newTable(r.w)
	if r.sweep {
		fmt.Fprintln(tw, "workload\tsystem\tlease\tdecisions/s\tp50\tp99\tredis calls/decision\tadmitted/ideal\tlease units max\tbound\tsources")
	} else {
		fmt.Fprintln(tw, "workload\tsystem\tdecisions/s\tp50\tp99\tredis calls/decision\tcpu/decision client+redis\tredis memory/key\tadmitted/ideal\tsources")
	}
	for _, res := range r.all {
		head := fmt.Sprintf("%s\t%s\t", res.Workload, res.System)
		tail := fmt.Sprintf("%.1f%%", res.AdmittedPctOfIdeal)
		if r.sweep {
			lease, units, bound := leaseLabel(res.LeaseFraction), "-", "-"
			if res.System == sysRedisRate {
				lease = "-"
			}
			if res.LeaseFraction > 0 {
				units, bound = strconv.FormatInt(res.LeaseUnitsMax, 10), fmt.Sprintf("+%.2f%%", res.LeaseBoundPct)
			}
			head += lease + "\t"
			tail += "\t" + units + "\t" + bound
		} else {
			tail = cpuLabel(res.ClientCPUus, res.RedisCPUus) + "\t" + bytesLabel(res.RedisBytesPerKey) + "\t" + tail
		}
		fmt.Fprintf(tw, "%s%.0f\t%s\t%s\t%.3f\t%s\t%s\n", head, res.DecisionsPerSec, latency(res.P50us), latency(res.P99us),
			res.RedisCallsPerDecision, tail, sourceMix(res.Sources))
	}
	if err := tw.Flush(); err != nil || r.sweep {
		return err
	}
	var order []string
	parts := map[string][]string{}
	for _, res := range r.all {
		if res.Decisions == 0 {
			continue
		}
		if parts[res.Workload] == nil {
			order = append(order, res.Workload)
		}
		redis := "?"
		if res.RedisCPUus != nil {
			redis = fmt.Sprintf("%.1f", cores(*res.RedisCPUus))
		}
		parts[res.Workload] = append(parts[res.Workload], fmt.Sprintf("%s %.1f + %s", res.System, cores(res.ClientCPUus), redis))
	}
	if len(order) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(r.w, "\ncores for %d decisions/s at the CPU per decision measured (client + Redis):\n", targetRate)
	for _, wl := range order {
		fmt.Fprintf(r.w, "  %-10s %s\n", wl, strings.Join(parts[wl], "; "))
	}
	return err
}

// cpuLabel is the client's and Redis's CPU per decision, "3.10+5.20µs";
// "?" for Redis when nil (miniredis: in the client's).
func cpuLabel(client float64, redis *float64) string {
	if redis == nil {
		return fmt.Sprintf("%.2f+?µs", client)
	}
	return fmt.Sprintf("%.2f+%.2fµs", client, *redis)
}

// bytesLabel is the nodes' memory per key, "61.6 B"; "?" when nil.
func bytesLabel(b *float64) string {
	if b == nil {
		return "?"
	}
	return fmt.Sprintf("%.1f B", *b)
}

// leaseLabel names a Lease.MaxFraction: "off", "0.25%".
func leaseLabel(f float64) string {
	if f == 0 {
		return "off"
	}
	return strconv.FormatFloat(100*f, 'f', -1, 64) + "%"
}

// latency formats microseconds: "8.42µs", "85µs", "1.27ms".
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

// sourceMix formats decisions by source as shares: "remote 93% deny-cache 7%".
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
