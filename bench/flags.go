package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// errUsage marks a bad command line: main exits with status 2 for it.
var errUsage = errors.New("bench: usage")

// The modes of a run: the default comparison, -sweep lease, -sweep load,
// -fault.
const (
	modeCompare = "compare"
	modeSweep   = "sweep"
	modeLoad    = "load"
	modeFault   = "fault"
)

// Defaults of -duration per mode, and other bounds of the command line.
const (
	compareDuration = 3 * time.Second  // per workload and system
	sweepDuration   = 2 * time.Second  // per point of the sweep
	faultDuration   = 12 * time.Second // the whole timeline
	maxKeys         = 10_000_000       // -keys: zipf and uniform hold their keys in memory
	maxIntervals    = 300              // -fault: -duration / -interval
	minInterval     = 10 * time.Millisecond
)

// faultKinds are the values of -fault on independent nodes.
var faultKinds = []string{"kill", "pause", "restart", "slow", "flap"}

// faultFailover is a -fault on a cluster (-cluster, embedded), as are
// the slot moves of move.go.
const faultFailover = "failover"

// algorithms maps the values of -algorithm to hybrid's algorithms, in
// their order.
var algorithms = []namedAlgorithm{
	{"token-bucket", hybrid.TokenBucket},
	{"leaky-bucket", hybrid.LeakyBucket},
	{"fixed-window", hybrid.FixedWindow},
	{"sliding-window-log", hybrid.SlidingWindowLog},
	{"sliding-window-counter", hybrid.SlidingWindowCounter},
}

// namedAlgorithm is an algorithm and its -algorithm spelling.
type namedAlgorithm struct {
	name string
	alg  hybrid.Algorithm
}

// algorithmName returns the -algorithm spelling of a.
func algorithmName(a hybrid.Algorithm) string {
	for _, x := range algorithms {
		if x.alg == a {
			return x.name
		}
	}
	return a.String()
}

// settings are the parsed flags.
type settings struct {
	mode          string        // modeCompare, modeSweep, modeLoad or modeFault
	duration      time.Duration // per run (compare, sweep), per step (load) or in all (fault)
	instances     int
	concurrency   int
	workloads     []string
	keys          int            // key-space size for zipf, uniform and seed; 0: their defaults
	zipfS         float64        // exponent of the Zipf distribution, > 1
	limits        []hybrid.Limit // the per-key limits of -limit; nil: per-workload defaults
	algorithm     hybrid.Algorithm
	leaseFraction float64          // hybrid Lease.MaxFraction; 0: leases off
	maxLoad       int64            // -sweep load: the highest step, decisions/s
	fault         string           // -fault: kill, pause, restart, slow or flap
	interval      time.Duration    // -fault: the timeline's resolution
	nodes         []*redis.Options // -nodes, with -tls-* applied; nil: embedded nodes
	cluster       bool             // -cluster: one Redis Cluster, embedded or seeded by -nodes
	out           string           // directory for the charts
	cpuprofile    string           // -cpuprofile: the CPU profile's file, or ""
	json          bool
	quiet         bool
	report        string   // -report: the Markdown file; "" for a single mode
	reportArgs    []string // -report: the flags every section's command is given
}

// parse reads the command line. Errors wrap errUsage and are one line.
func parse(args []string, stderr io.Writer) (settings, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	// The flag package would print its error and the whole usage on a bad
	// flag; bench prints one line instead, and the usage for -h only.
	fs.SetOutput(io.Discard)
	var s settings
	names := knownWorkloads()
	fs.DurationVar(&s.duration, "duration", compareDuration,
		"how long each run lasts: per workload and system; per point with -sweep lease and per step with -sweep load, where the default is 2s; the whole timeline with -fault, where it is 12s")
	fs.IntVar(&s.instances, "instances", 4, "hybrid.Limiter instances over the same nodes, the load spread over them")
	fs.IntVar(&s.concurrency, "concurrency", 64, "goroutines sending requests, in total (with -sweep load, the workers that make the calls; default 512)")
	workload := fs.String("workload", "all", "workload to run: "+strings.Join(names, ", ")+" or all, which is all but seed (with -sweep lease the default is hot and zipf, with -sweep load zipf and uniform); seed is the seed's service: Zipf over 10000000 clients, each under 100/m+1000/h")
	fs.IntVar(&s.keys, "keys", 0, "key-space size of the zipf, uniform and seed workloads (default 1000000 for zipf, 100000 for uniform, 10000000 for seed)")
	fs.Float64Var(&s.zipfS, "zipf", zipfS, "exponent s of the Zipf distribution, > 1")
	limitFlag := fs.String("limit", "", "the per-key `limits` of every workload, as rate/period: 10000/s, 1000/m, 100/h, 50/250ms; several joined by +, every request charged against all of them: 100/m+1000/h (default per workload: hot 1000000000/s, overlimit 10000/s, zipf 1000/s, uniform 1000000/m, seed 100/m+1000/h; with -sweep, hot 1000000/s)")
	algFlag := fs.String("algorithm", "token-bucket", "algorithm of the limit: token-bucket, leaky-bucket, fixed-window, sliding-window-log or sliding-window-counter")
	fs.Float64Var(&s.leaseFraction, "lease-fraction", 0.01, "hybrid Lease.MaxFraction: the largest lease as a fraction of the limit, in [0, 1]; 0 turns leases off")
	sweep := fs.String("sweep", "", "`lease|load` lease: run hot and zipf for a range of -lease-fraction values and write lease-sweep.svg; load: offer Poisson arrivals at rising rates, open loop, and write latency-throughput.svg")
	fs.Int64Var(&s.maxLoad, "max-load", loadSteps[len(loadSteps)-1], "with -sweep load, the highest offered load to step to, in decisions/s")
	fs.StringVar(&s.fault, "fault", "", "`kill|pause|restart|slow|flap|failover|reshard|scale-out` one embedded node midway through a mixed run (slow: its replies delayed by half the Limiter's Timeout; flap: the path to it down and up every 100-300ms; with -cluster only: failover kills a master, its replica is promoted; reshard moves 2,000 of its slots to another master; scale-out adds a master and rebalances onto it); print a timeline and write fault-timeline.svg")
	fs.DurationVar(&s.interval, "interval", time.Second, "with -fault, the width of one row of the timeline")
	nodes := fs.String("nodes", "", "comma-separated `URLs` (redis://[user:password@]host:port[/db], rediss:// for TLS) of existing independent nodes to use instead of embedded ones; with -cluster, seed nodes of one existing Redis Cluster (database 0, one user and password, all redis:// or all rediss://)")
	fs.BoolVar(&s.cluster, "cluster", false, "run on an embedded Redis Cluster of 3 masters and 3 replicas instead of 3 independent nodes, or with -nodes on the existing cluster those URLs seed: hybridlimit with the cluster as one node (a breaker per master), redis_rate with a cluster client")
	var tlsf tlsFiles
	fs.StringVar(&tlsf.ca, "tls-ca", "", "with -nodes: PEM `file` of the CA certificates that verify the rediss:// nodes (default the system's roots)")
	fs.StringVar(&tlsf.cert, "tls-cert", "", "with -nodes: PEM `file` of the client certificate shown to the rediss:// nodes; needs -tls-key")
	fs.StringVar(&tlsf.key, "tls-key", "", "with -nodes: PEM `file` of the private key of -tls-cert")
	fs.StringVar(&s.out, "out", ".", "directory the charts are written to")
	fs.StringVar(&s.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to `file`; the goroutines of each system's decisions carry the pprof labels system (hybridlimit, redis_rate, generator) and workload: go tool pprof -tagfocus system=hybridlimit")
	fs.BoolVar(&s.json, "json", false, "print one JSON object per result line instead of tables")
	fs.BoolVar(&s.quiet, "q", false, "quiet: no progress bar on stderr")
	fs.StringVar(&s.report, "report", "", "run the standard set (the comparison, -sweep lease, -sweep load and the fault timelines), each as its own command would, and write one Markdown report to `file` with the charts beside it; -duration, -interval, -max-load, -instances, -concurrency, -keys, -nodes, -cluster, -tls-* and -q pass to the sections")
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintln(stderr, "usage: go run ./bench [flags]    (go doc ./bench for the whole story)")
			fs.PrintDefaults()
			return s, err
		}
		return s, fmt.Errorf("%w: %s", errUsage, firstLine(err.Error()))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	bad := func(format string, a ...any) (settings, error) {
		return s, fmt.Errorf("%w: "+format, append([]any{errUsage}, a...)...)
	}

	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	if set["report"] {
		return reportSettings(s, fs, set)
	}
	s.mode = modeCompare
	switch {
	case *sweep != "" && s.fault != "":
		return bad("-sweep and -fault: give one of them")
	case *sweep == "lease":
		s.mode = modeSweep
	case *sweep == "load":
		s.mode = modeLoad
	case *sweep != "":
		return bad("-sweep %q: want lease or load", *sweep)
	case s.fault != "":
		if !slices.Contains(faultKinds, s.fault) && !slices.Contains(clusterFaults, s.fault) {
			return bad("-fault %q: want one of %s, or with -cluster %s", s.fault, strings.Join(faultKinds, ", "), strings.Join(clusterFaults, ", "))
		}
		s.mode = modeFault
	}

	if !set["duration"] {
		switch s.mode {
		case modeSweep:
			s.duration = sweepDuration
		case modeLoad:
			s.duration = loadDuration
		case modeFault:
			s.duration = faultDuration
			if s.fault == faultScaleOut {
				s.duration = scaleOutDuration
			}
		}
	}
	if s.mode == modeLoad && !set["concurrency"] {
		s.concurrency = loadWorkers
	}
	switch {
	case s.duration <= 0:
		return bad("-duration %v: must be positive", s.duration)
	case s.instances < 1:
		return bad("-instances %d: must be at least 1", s.instances)
	case s.instances > 1024:
		return bad("-instances %d: at most 1024", s.instances)
	case s.concurrency < 1:
		return bad("-concurrency %d: must be at least 1", s.concurrency)
	case s.concurrency > 1<<16:
		return bad("-concurrency %d: at most 65536", s.concurrency)
	case set["keys"] && (s.keys < 2 || s.keys > maxKeys):
		return bad("-keys %d: must be in [2, %d]", s.keys, maxKeys)
	case math.IsNaN(s.zipfS) || s.zipfS <= 1 || s.zipfS > 100:
		return bad("-zipf %v: the exponent must be > 1 (and at most 100)", s.zipfS)
	case math.IsNaN(s.leaseFraction) || s.leaseFraction < 0 || s.leaseFraction > 1:
		return bad("-lease-fraction %v: must be in [0, 1] (0 turns leases off)", s.leaseFraction)
	case s.mode == modeSweep && set["lease-fraction"]:
		return bad("-lease-fraction with -sweep lease: the sweep varies it")
	case set["max-load"] && s.mode != modeLoad:
		return bad("-max-load without -sweep load: only the load sweep steps its offered load")
	case s.maxLoad < loadSteps[0]:
		return bad("-max-load %d: at least the first step, %d", s.maxLoad, loadSteps[0])
	case s.out == "":
		return bad("-out: empty directory name")
	}

	i := slices.IndexFunc(algorithms, func(a namedAlgorithm) bool { return a.name == *algFlag })
	if i < 0 {
		return bad("-algorithm %q: want one of token-bucket, leaky-bucket, fixed-window, sliding-window-log, sliding-window-counter", *algFlag)
	}
	s.algorithm = algorithms[i].alg

	if *limitFlag != "" {
		ls, err := parseLimits(*limitFlag)
		if err != nil {
			return bad("-limit %q: %v", *limitFlag, err)
		}
		s.limits = ls
	}

	switch {
	case s.mode == modeFault && set["workload"]:
		return bad("-workload with -fault: the fault run has its own mix of hot and zipf keys")
	case s.mode == modeFault:
		s.workloads = nil
	case *workload == "all" && s.mode == modeSweep && !set["workload"]:
		s.workloads = []string{"hot", "zipf"}
	case *workload == "all" && s.mode == modeLoad && !set["workload"]:
		// hot and overlimit saturate at millions of decisions/s, more than
		// a generator on a few cores offers: they run when asked for.
		s.workloads = []string{"zipf", "uniform"}
	case *workload == "all":
		s.workloads = workloadNames()
	case slices.Contains(names, *workload):
		s.workloads = []string{*workload}
	default:
		return bad("-workload %q: want one of %s or all", *workload, strings.Join(names, ", "))
	}

	if s.mode == modeFault {
		switch {
		case s.interval < minInterval:
			return bad("-interval %v: at least %v", s.interval, minInterval)
		case s.duration/s.interval > maxIntervals:
			return bad("-duration %v / -interval %v: at most %d rows in the timeline", s.duration, s.interval, maxIntervals)
		case s.duration < 3*s.interval:
			return bad("-duration %v: at least 3 × -interval (%v) with -fault", s.duration, s.interval)
		}
	} else if set["interval"] {
		return bad("-interval without -fault: only the fault timeline has rows per interval")
	}

	if tlsf != (tlsFiles{}) && *nodes == "" {
		return bad("-tls-ca, -tls-cert and -tls-key: they are for the rediss:// URLs of -nodes; embedded nodes speak plain TCP")
	}
	if *nodes != "" {
		opts, err := parseNodes(*nodes)
		if err != nil {
			return bad("-nodes: %v", err)
		}
		if s.mode == modeFault {
			return bad("-fault with -nodes: faults are injected into embedded nodes only; bench never kills a node it did not start")
		}
		if err := tlsf.apply(opts); err != nil {
			return bad("%v", err)
		}
		if s.cluster {
			if err := checkSeeds(opts); err != nil {
				return bad("-cluster -nodes: %v", err)
			}
		}
		s.nodes = opts
	}
	switch {
	case s.fault == faultFailover && !s.cluster:
		return bad("-fault failover needs -cluster: it kills a master of the embedded cluster and times its replica's promotion")
	case movesSlots(s.fault) && !s.cluster:
		return bad("-fault %s needs -cluster: it moves slots of the embedded cluster", s.fault)
	case s.cluster && s.mode == modeFault && !slices.Contains(clusterFaults, s.fault):
		return bad("-cluster -fault %s: on a cluster the faults are %s", s.fault, strings.Join(clusterFaults, ", "))
	}

	// Every limit the run will use must be valid for the chosen algorithm.
	for _, name := range s.limitNames() {
		ls := s.workloadLimits(name)
		if err := hybrid.CheckLimits(1, ls...); err != nil {
			if s.limits == nil {
				return bad("-algorithm %s: the %s workload's default limits %s: %v; give a -limit", *algFlag, name, formatLimits(ls), err)
			}
			return bad("-limit %q with -algorithm %s: %v", *limitFlag, *algFlag, err)
		}
	}
	return s, nil
}

// limitNames lists the workloads whose limits the run uses.
func (s settings) limitNames() []string {
	if s.mode == modeFault {
		return []string{"hot", "zipf"}
	}
	return s.workloads
}

// parseLimit reads "rate/period": a positive integer (underscores
// allowed) and s, m, h or a Go duration such as 250ms or 10s.
func parseLimit(v string) (hybrid.Limit, error) {
	r, p, ok := strings.Cut(v, "/")
	if !ok {
		return hybrid.Limit{}, errors.New("want rate/period, for example 10000/s or 1000/m")
	}
	rate, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(r), "_", ""), 10, 64)
	if err != nil || rate < 1 {
		return hybrid.Limit{}, fmt.Errorf("rate %q: want a positive integer", r)
	}
	var period time.Duration
	switch p = strings.TrimSpace(p); p {
	case "s":
		period = time.Second
	case "m":
		period = time.Minute
	case "h":
		period = time.Hour
	default:
		period, err = time.ParseDuration(p)
		if err != nil || period <= 0 {
			return hybrid.Limit{}, fmt.Errorf("period %q: want s, m, h or a positive duration such as 250ms", p)
		}
	}
	l := hybrid.Limit{Rate: rate, Period: period}
	if err := l.Validate(); err != nil {
		return hybrid.Limit{}, err
	}
	return l, nil
}

// parseLimits reads -limit: one limit as parseLimit reads it, or several
// joined by '+' ("100/m+1000/h"), each request charged against all of
// them. A list hybrid would refuse (a limit given twice, more than
// hybrid.MaxLimits) is an error, hybrid's.
func parseLimits(v string) ([]hybrid.Limit, error) {
	var out []hybrid.Limit
	for part := range strings.SplitSeq(v, "+") {
		if strings.TrimSpace(part) == "" {
			return nil, errors.New("empty limit in the list: want rate/period, several joined by +, for example 100/m+1000/h")
		}
		l, err := parseLimit(part)
		if err != nil {
			if strings.Contains(v, "+") {
				return nil, fmt.Errorf("%s: %w", strings.TrimSpace(part), err)
			}
			return nil, err
		}
		out = append(out, l)
	}
	if err := hybrid.CheckLimits(1, out...); err != nil {
		return nil, err
	}
	return out, nil
}

// formatLimit writes a limit as -limit reads it: "1000/s", "10/250ms".
func formatLimit(l hybrid.Limit) string { return string(appendLimit(nil, l)) }

// appendLimit appends l to b as formatLimit writes it.
func appendLimit(b []byte, l hybrid.Limit) []byte {
	b = strconv.AppendInt(b, l.Rate, 10)
	b = append(b, '/')
	switch l.Period {
	case time.Second:
		return append(b, 's')
	case time.Minute:
		return append(b, 'm')
	case time.Hour:
		return append(b, 'h')
	}
	return append(b, l.Period.String()...)
}

// formatLimits writes limits as -limit reads them: "100/m+1000/h".
func formatLimits(ls []hybrid.Limit) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = formatLimit(l)
	}
	return strings.Join(parts, "+")
}

// parseNodes reads the comma-separated URLs of -nodes with redis.ParseURL.
func parseNodes(v string) ([]*redis.Options, error) {
	var out []*redis.Options
	seen := map[string]bool{}
	for raw := range strings.SplitSeq(v, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			return nil, errors.New("empty URL in the list")
		}
		shown := redactURL(raw)
		if !strings.HasPrefix(raw, "redis://") && !strings.HasPrefix(raw, "rediss://") {
			return nil, fmt.Errorf("%s: want a redis:// or rediss:// URL", shown)
		}
		o, err := redis.ParseURL(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %s", shown, firstLine(strings.ReplaceAll(err.Error(), raw, shown)))
		}
		name := nodeName(o)
		if seen[name] {
			return nil, fmt.Errorf("%s: node %s given twice", shown, name)
		}
		seen[name] = true
		out = append(out, o)
	}
	return out, nil
}

// nodeName names a node on hybrid's ring: its address, and its database
// when not 0. Every instance uses the same names for the same nodes.
func nodeName(o *redis.Options) string {
	if o.DB != 0 {
		return o.Addr + "/" + strconv.Itoa(o.DB)
	}
	return o.Addr
}

// redactURL hides the password of a URL for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "a node URL"
	}
	return u.Redacted()
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// checkSeeds checks the -nodes URLs given with -cluster: seed nodes of one
// Redis Cluster, so database 0 (a cluster has no other), one user and
// password, and all plain or all TLS.
func checkSeeds(opts []*redis.Options) error {
	first := opts[0]
	for _, o := range opts {
		switch {
		case o.DB != 0:
			return fmt.Errorf("%s: database %d; a Redis Cluster has database 0 only", o.Addr, o.DB)
		case o.Username != first.Username || o.Password != first.Password:
			return fmt.Errorf("%s: its user or password differs from %s's; the seeds of one cluster share them", o.Addr, first.Addr)
		case (o.TLSConfig == nil) != (first.TLSConfig == nil):
			return fmt.Errorf("%s and %s: redis:// and rediss:// mixed; the seeds of one cluster are all plain or all TLS", first.Addr, o.Addr)
		}
	}
	return nil
}
