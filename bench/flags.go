package main

import (
	"cmp"
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
	"github.com/hybridlimit/hybridlimit/remote"
)

// errUsage marks a bad command line: main exits with status 2 for it.
var errUsage = errors.New("bench: usage")

// The modes of a run: the default, -sweep lease, -sweep load, -fault.
const (
	modeCompare = "compare"
	modeSweep   = "sweep"
	modeLoad    = "load"
	modeFault   = "fault"
)

// -duration's default per mode, and bounds of the command line.
const (
	compareDuration = 3 * time.Second  // per workload and system
	sweepDuration   = 2 * time.Second  // per point of the sweep
	faultDuration   = 12 * time.Second // the whole timeline
	maxKeys         = 10_000_000       // -keys: zipf and uniform hold their keys in memory
	maxIntervals    = 300              // -fault: -duration / -interval
	minInterval     = 10 * time.Millisecond
)

// -layout's values.
const (
	layoutKeys    = "keys"
	layoutCompact = "compact"
)

// layout is hybrid's Layout for a workload of keys keys.
func (s settings) layout(keys int) hybrid.Layout {
	if !s.compact {
		return hybrid.Layout{}
	}
	return hybrid.Layout{Compact: true, Keys: cmp.Or(s.layoutKeys, keys)}
}

// faultKinds are -fault's on independent nodes; clusterFaults on -cluster.
var faultKinds = []string{"kill", "pause", "restart", "slow", "flap"}

const faultFailover = "failover"

// algorithms are -algorithm's values, in hybrid's order.
var algorithms = []namedAlgorithm{
	{"token-bucket", hybrid.TokenBucket},
	{"leaky-bucket", hybrid.LeakyBucket},
	{"fixed-window", hybrid.FixedWindow},
	{"sliding-window-log", hybrid.SlidingWindowLog},
	{"sliding-window-counter", hybrid.SlidingWindowCounter},
}

type namedAlgorithm struct {
	name string
	alg  hybrid.Algorithm
}

// algorithmName returns the -algorithm spelling of a.
func algorithmName(a hybrid.Algorithm) string {
	if i := slices.IndexFunc(algorithms, func(x namedAlgorithm) bool { return x.alg == a }); i >= 0 {
		return algorithms[i].name
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
	compact       bool             // -layout compact: hybrid's compact Layout
	layoutKeys    int              // -layout-keys: its Keys; 0: the workload's key space
	maxLoad       int64            // -sweep load: the highest step, decisions/s
	fault         string           // -fault: kill, pause, restart, slow or flap
	interval      time.Duration    // -fault: the timeline's resolution
	nodes         []*redis.Options // -nodes, with -tls-* applied; nil: embedded nodes
	cluster       bool             // -cluster: one Redis Cluster, embedded or seeded by -nodes
	out           string           // directory for the charts
	cpuprofile    string           // -cpuprofile: the CPU profile's file, or ""
	json, quiet   bool
	report        string   // -report: the Markdown file; "" for a single mode
	reportArgs    []string // -report: the flags every section's command is given
}

// parse reads the command line. Errors wrap errUsage and are one line;
// -h prints the flags on stderr and returns flag.ErrHelp.
func parse(args []string, stderr io.Writer) (settings, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // one line for a bad flag, not the whole usage
	var s settings
	names := knownWorkloads()
	fs.DurationVar(&s.duration, "duration", compareDuration, "how long each run lasts: per workload and system; per point with -sweep lease and per step with -sweep load, 2s by default there; the whole timeline with -fault, 12s by default")
	fs.IntVar(&s.instances, "instances", 4, "hybrid.Limiter instances over the same nodes")
	fs.IntVar(&s.concurrency, "concurrency", 64, "goroutines sending requests in all; with -sweep load, the workers, 512 by default")
	workload := fs.String("workload", "all", "one of "+strings.Join(names, ", ")+" or all, which is all but seed (with -sweep lease hot and zipf, with -sweep load zipf and uniform)")
	fs.IntVar(&s.keys, "keys", 0, "key-space size (default 1000000 for zipf, 100000 for uniform, 10000000 for seed)")
	fs.Float64Var(&s.zipfS, "zipf", zipfS, "exponent s of the Zipf distribution, > 1")
	limitFlag := fs.String("limit", "", "per-key `limits` as rate/period (10000/s, 1000/m, 50/250ms), several joined by + (default hot 1000000000/s, with -sweep 1000000/s; overlimit 10000/s; zipf 1000/s; uniform 1000000/m; seed 100/m+1000/h)")
	algFlag := fs.String("algorithm", algorithms[0].name, "algorithm of the limits: token-bucket, leaky-bucket, fixed-window, sliding-window-log or sliding-window-counter")
	fs.Float64Var(&s.leaseFraction, "lease-fraction", 0.01, "hybrid Lease.MaxFraction, in [0, 1]; 0 turns leases off")
	layout := fs.String("layout", layoutKeys, "how hybridlimit keeps its states in Redis: keys (a key each) or compact (fields of shared hashes, hybrid.Layout)")
	fs.IntVar(&s.layoutKeys, "layout-keys", 0, "with -layout compact, the `keys` its hashes are sized for, hybrid.Layout.Keys (default the workload's key space)")
	sweep := fs.String("sweep", "", "`mode`: lease runs a range of -lease-fraction values; load offers open-loop Poisson load at rising rates")
	fs.Int64Var(&s.maxLoad, "max-load", loadSteps[len(loadSteps)-1], "with -sweep load, the highest offered load, decisions/s")
	fs.StringVar(&s.fault, "fault", "", "`kind` of fault midway through a run, shown as a timeline: kill, pause, restart, slow or flap; with -cluster failover, reshard or scale-out")
	fs.DurationVar(&s.interval, "interval", time.Second, "with -fault, the width of one row of the timeline")
	nodes := fs.String("nodes", "", "comma-separated `URLs` (redis://[user:password@]host:port[/db], rediss:// for TLS) of existing nodes to use instead of embedded ones; with -cluster, seeds of one Redis Cluster")
	fs.BoolVar(&s.cluster, "cluster", false, "run on a Redis Cluster: an embedded one of 3 masters and 3 replicas, or the one -nodes seeds")
	var tlsf tlsFiles
	fs.StringVar(&tlsf.ca, "tls-ca", "", "with -nodes: PEM `file` of the CAs that verify rediss:// nodes (default the system's)")
	fs.StringVar(&tlsf.cert, "tls-cert", "", "with -nodes: PEM `file` of the client certificate; needs -tls-key")
	fs.StringVar(&tlsf.key, "tls-key", "", "with -nodes: PEM `file` of the private key of -tls-cert")
	fs.StringVar(&s.out, "out", ".", "directory the charts are written to")
	fs.StringVar(&s.cpuprofile, "cpuprofile", "", "write a CPU profile to `file`, samples labelled system (hybridlimit, redis_rate, generator) and workload: go tool pprof -tagfocus system=hybridlimit")
	fs.BoolVar(&s.json, "json", false, "print JSON lines instead of tables")
	fs.BoolVar(&s.quiet, "q", false, "no progress bar on stderr")
	fs.StringVar(&s.report, "report", "", "run the standard set of modes and write one Markdown report to `file`")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stderr)
		fmt.Fprintln(stderr, "usage: go run ./bench [flags]    (go doc ./bench for the whole story)")
		fs.PrintDefaults()
		return s, err
	} else if err != nil {
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
	s.mode = map[string]string{"": modeCompare, "lease": modeSweep, "load": modeLoad}[*sweep]
	switch {
	case *sweep != "" && s.fault != "":
		return bad("-sweep and -fault: give one of them")
	case s.mode == "":
		return bad("-sweep %q: want lease or load", *sweep)
	case s.fault != "" && !slices.Contains(faultKinds, s.fault) && !slices.Contains(clusterFaults, s.fault):
		return bad("-fault %q: want one of %s, or with -cluster %s", s.fault, strings.Join(faultKinds, ", "), strings.Join(clusterFaults, ", "))
	case s.fault != "":
		s.mode = modeFault
	}
	if !set["duration"] {
		s.duration = map[string]time.Duration{modeCompare: compareDuration, modeSweep: sweepDuration, modeLoad: loadDuration, modeFault: faultDuration}[s.mode]
		if s.fault == faultScaleOut {
			s.duration = scaleOutDuration
		}
	}
	if s.mode == modeLoad && !set["concurrency"] {
		s.concurrency = loadWorkers
	}
	alg := slices.IndexFunc(algorithms, func(a namedAlgorithm) bool { return a.name == *algFlag })
	var limitErr, nodesErr error
	if *limitFlag != "" {
		s.limits, limitErr = parseLimits(*limitFlag)
	}
	if *nodes != "" {
		s.nodes, nodesErr = parseNodes(*nodes, tlsf, s.cluster)
	}
	fault := s.mode == modeFault
	s.compact = *layout == layoutCompact
	for _, c := range []struct {
		bad bool
		msg string
	}{
		{s.duration <= 0, fmt.Sprintf("-duration %v: must be positive", s.duration)},
		{s.instances < 1 || s.instances > 1024, fmt.Sprintf("-instances %d: want 1 to 1024", s.instances)},
		{s.concurrency < 1 || s.concurrency > 1<<16, fmt.Sprintf("-concurrency %d: want 1 to 65536", s.concurrency)},
		{set["keys"] && (s.keys < 2 || s.keys > maxKeys), fmt.Sprintf("-keys %d: must be in [2, %d]", s.keys, maxKeys)},
		{math.IsNaN(s.zipfS) || s.zipfS <= 1 || s.zipfS > 100, fmt.Sprintf("-zipf %v: the exponent must be > 1 (and at most 100)", s.zipfS)},
		{!(s.leaseFraction >= 0 && s.leaseFraction <= 1), fmt.Sprintf("-lease-fraction %v: must be in [0, 1] (0 turns leases off)", s.leaseFraction)},
		{s.mode == modeSweep && set["lease-fraction"], "-lease-fraction with -sweep lease: the sweep varies it"},
		{set["max-load"] && s.mode != modeLoad, "-max-load without -sweep load: only the load sweep steps its offered load"},
		{s.maxLoad < loadSteps[0], fmt.Sprintf("-max-load %d: at least the first step, %d", s.maxLoad, loadSteps[0])},
		{s.out == "", "-out: empty directory name"},
		{*layout != layoutKeys && *layout != layoutCompact, fmt.Sprintf("-layout %q: want keys or compact", *layout)},
		{set["layout-keys"] && !s.compact, "-layout-keys without -layout compact: only the compact layout is sized"},
		{set["layout-keys"] && (s.layoutKeys < 1 || s.layoutKeys > remote.MaxLayoutKeys), fmt.Sprintf("-layout-keys %d: want 1 to %d", s.layoutKeys, int64(remote.MaxLayoutKeys))},
		{alg < 0, fmt.Sprintf("-algorithm %q: want one of token-bucket, leaky-bucket, fixed-window, sliding-window-log, sliding-window-counter", *algFlag)},
		{limitErr != nil, fmt.Sprintf("-limit %q: %v", *limitFlag, limitErr)},
		{fault && set["workload"], "-workload with -fault: the fault run has its own mix of hot and zipf keys"},
		{*workload != "all" && !slices.Contains(names, *workload), fmt.Sprintf("-workload %q: want one of %s or all", *workload, strings.Join(names, ", "))},
		{fault && s.interval < minInterval, fmt.Sprintf("-interval %v: at least %v", s.interval, minInterval)},
		{fault && s.interval >= minInterval && s.duration/s.interval > maxIntervals, fmt.Sprintf("-duration %v / -interval %v: at most %d rows in the timeline", s.duration, s.interval, maxIntervals)},
		{fault && s.duration < 3*s.interval, fmt.Sprintf("-duration %v: at least 3 × -interval (%v) with -fault", s.duration, s.interval)},
		{!fault && set["interval"], "-interval without -fault: only the fault timeline has rows per interval"},
		{tlsf != (tlsFiles{}) && *nodes == "", "-tls-ca, -tls-cert and -tls-key: they are for the rediss:// URLs of -nodes; embedded nodes speak plain TCP"},
		{fault && *nodes != "", "-fault with -nodes: faults are injected into embedded nodes only; bench never kills a node it did not start"},
		{nodesErr != nil, fmt.Sprint(nodesErr)},
		{s.fault == faultFailover && !s.cluster, "-fault failover needs -cluster: it kills a master of the embedded cluster and times its replica's promotion"},
		{movesSlots(s.fault) && !s.cluster, fmt.Sprintf("-fault %s needs -cluster: it moves slots of the embedded cluster", s.fault)},
		{s.cluster && fault && !slices.Contains(clusterFaults, s.fault), fmt.Sprintf("-cluster -fault %s: on a cluster the faults are %s", s.fault, strings.Join(clusterFaults, ", "))},
	} {
		if c.bad {
			return bad("%s", c.msg)
		}
	}
	s.algorithm = algorithms[alg].alg
	switch {
	case fault: // its own mix of keys
	case *workload != "all":
		s.workloads = []string{*workload}
	case s.mode != modeCompare && !set["workload"]: // load: hot and overlimit outrun a few cores' generator
		s.workloads = map[string][]string{modeSweep: {"hot", "zipf"}, modeLoad: {"zipf", "uniform"}}[s.mode]
	default:
		s.workloads = workloadNames()
	}
	for _, name := range s.limitNames() {
		ls := s.workloadLimits(name)
		if err := hybrid.CheckLimits(1, ls...); err != nil && s.limits == nil {
			return bad("-algorithm %s: the %s workload's default limits %s: %v; give a -limit", *algFlag, name, formatLimits(ls), err)
		} else if err != nil {
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

// periods are the period units of -limit besides Go durations.
var periods = map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}

// parseLimit reads "rate/period": a positive integer (underscores
// allowed), and s, m, h or a Go duration such as 250ms.
func parseLimit(v string) (hybrid.Limit, error) {
	r, p, ok := strings.Cut(v, "/")
	if !ok {
		return hybrid.Limit{}, errors.New("want rate/period, for example 10000/s or 1000/m")
	}
	rate, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(r), "_", ""), 10, 64)
	if err != nil || rate < 1 {
		return hybrid.Limit{}, fmt.Errorf("rate %q: want a positive integer", r)
	}
	p = strings.TrimSpace(p)
	period, ok := periods[p]
	if !ok {
		if period, err = time.ParseDuration(p); err != nil || period <= 0 {
			return hybrid.Limit{}, fmt.Errorf("period %q: want s, m, h or a positive duration such as 250ms", p)
		}
	}
	l := hybrid.Limit{Rate: rate, Period: period}
	if err := l.Validate(); err != nil {
		return hybrid.Limit{}, err
	}
	return l, nil
}

// parseLimits reads -limit: limits joined by '+' ("100/m+1000/h"); a list
// hybrid.CheckLimits refuses is an error.
func parseLimits(v string) ([]hybrid.Limit, error) {
	var out []hybrid.Limit
	for part := range strings.SplitSeq(v, "+") {
		if strings.TrimSpace(part) == "" {
			return nil, errors.New("empty limit in the list: want rate/period, several joined by +, for example 100/m+1000/h")
		}
		l, err := parseLimit(part)
		if err != nil && strings.Contains(v, "+") {
			return nil, fmt.Errorf("%s: %w", strings.TrimSpace(part), err)
		} else if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, hybrid.CheckLimits(1, out...)
}

// formatLimit, appendLimit and formatLimits write limits as -limit reads
// them: "1000/s", "10/250ms", "100/m+1000/h".
func formatLimit(l hybrid.Limit) string { return string(appendLimit(nil, l)) }

func appendLimit(b []byte, l hybrid.Limit) []byte {
	b = append(strconv.AppendInt(b, l.Rate, 10), '/')
	for unit, d := range periods {
		if l.Period == d {
			return append(b, unit...)
		}
	}
	return append(b, l.Period.String()...)
}

func formatLimits(ls []hybrid.Limit) string {
	var b []byte
	for _, l := range ls {
		b = append(appendLimit(b, l), '+')
	}
	return strings.TrimSuffix(string(b), "+")
}

// parseNodes reads -nodes with redis.ParseURL and applies the -tls-*
// files. With -cluster the URLs are seeds of one cluster: database 0, one
// user and password, all plain or all TLS. Errors never show a password.
func parseNodes(v string, tlsf tlsFiles, cluster bool) ([]*redis.Options, error) {
	var out []*redis.Options
	seen := map[string]bool{}
	for raw := range strings.SplitSeq(v, ",") {
		raw = strings.TrimSpace(raw)
		shown := redactURL(raw)
		o, err := redis.ParseURL(raw)
		switch {
		case raw == "":
			return nil, errors.New("-nodes: empty URL in the list")
		case !strings.HasPrefix(raw, "redis://") && !strings.HasPrefix(raw, "rediss://"):
			return nil, fmt.Errorf("-nodes: %s: want a redis:// or rediss:// URL", shown)
		case err != nil:
			return nil, fmt.Errorf("-nodes: %s: %s", shown, firstLine(strings.ReplaceAll(err.Error(), raw, shown)))
		case seen[nodeName(o)]:
			return nil, fmt.Errorf("-nodes: %s: node %s given twice", shown, nodeName(o))
		}
		seen[nodeName(o)] = true
		out = append(out, o)
	}
	if err := tlsf.apply(out); err != nil {
		return nil, err
	}
	for _, o := range out {
		switch first := out[0]; {
		case !cluster:
		case o.DB != 0:
			return nil, fmt.Errorf("-cluster -nodes: %s: database %d; a Redis Cluster has database 0 only", o.Addr, o.DB)
		case o.Username != first.Username || o.Password != first.Password:
			return nil, fmt.Errorf("-cluster -nodes: %s: its user or password differs from %s's; the seeds of one cluster share them", o.Addr, first.Addr)
		case (o.TLSConfig == nil) != (first.TLSConfig == nil):
			return nil, fmt.Errorf("-cluster -nodes: %s and %s: redis:// and rediss:// mixed; the seeds of one cluster are all plain or all TLS", first.Addr, o.Addr)
		}
	}
	return out, nil
}

// nodeName names a node on hybrid's ring: its address, and /db when not 0.
func nodeName(o *redis.Options) string {
	if o.DB != 0 {
		return o.Addr + "/" + strconv.Itoa(o.DB)
	}
	return o.Addr
}

// redactURL hides the password of a URL for messages.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "a node URL"
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
