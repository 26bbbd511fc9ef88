package promlimit

import (
	"fmt"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/rules"
)

// DefaultNamespace starts every metric name when Config.Namespace is empty.
const DefaultNamespace = "hybridlimit"

// HTTPSource is what the Collector reads from an httplimit.Middleware.
// httplimit.Stats is rules.Stats, so promlimit does not import httplimit.
type HTTPSource interface {
	// Stats returns a snapshot of the middleware's counters.
	Stats() rules.Stats
}

// GRPCSource is what the Collector reads from a grpclimit.Interceptor.
// grpclimit.Stats is rules.Stats, so promlimit does not import grpclimit
// (nor grpc).
type GRPCSource interface {
	// Stats returns a snapshot of the interceptors' counters.
	Stats() rules.Stats
}

// Config configures a Collector. The zero value of each field means its
// documented default.
type Config struct {
	// Namespace starts every metric name: "<namespace>_decisions_total".
	// Default "hybridlimit".
	Namespace string
	// ConstLabels are added to every metric, for example to tell two
	// Limiters of one process apart. Default none.
	ConstLabels prometheus.Labels
	// HTTP, when set, adds the metrics of an httplimit.Middleware: requests
	// per rule and outcome, and rule reloads. Default nil.
	HTTP HTTPSource
	// GRPC, when set, adds the same metrics of a grpclimit.Interceptor,
	// named grpc_ where HTTP's are named http_. Default nil.
	GRPC GRPCSource
}

var validNamespace = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Collector is a prometheus.Collector for a Limiter (and its middlewares). It
// is safe for concurrent use, as Prometheus requires.
type Collector struct {
	lim  *hybrid.Limiter
	http HTTPSource
	grpc GRPCSource

	decisions, calls, errs, batched, latency, breaker, opened, degraded,
	leaseKeys, leaseUnits, leaseLost, leaseUnknown, denyKeys, undecided, noNode, mayEvict *prometheus.Desc
	httpRules, grpcRules ruleDescs
}

// ruleDescs are the metrics of one middleware's rules.
type ruleDescs struct {
	requests, reloads, reloadErrors *prometheus.Desc
}

func newRuleDescs(desc func(name, help string, labels ...string) *prometheus.Desc, proto, what string) ruleDescs {
	return ruleDescs{
		requests:     desc(proto+"_requests_total", what+" decided by a rule, by outcome.", "rule", "outcome"),
		reloads:      desc(proto+"_reloads_total", "Rule sets put in force after start."),
		reloadErrors: desc(proto+"_reload_errors_total", "Rule sets refused as invalid."),
	}
}

func (d ruleDescs) describe(ch chan<- *prometheus.Desc) {
	ch <- d.requests
	ch <- d.reloads
	ch <- d.reloadErrors
}

// collect emits a middleware's counters.
func (d ruleDescs) collect(ch chan<- prometheus.Metric, st rules.Stats) {
	for _, r := range st.Rules {
		emit(ch, d.requests, prometheus.CounterValue, float64(r.Allowed), r.Name, "allowed")
		emit(ch, d.requests, prometheus.CounterValue, float64(r.Delayed), r.Name, "delayed")
		emit(ch, d.requests, prometheus.CounterValue, float64(r.Denied), r.Name, "denied")
		emit(ch, d.requests, prometheus.CounterValue, float64(r.ShadowDenied), r.Name, "shadow_denied")
		emit(ch, d.requests, prometheus.CounterValue, float64(r.Errors), r.Name, "error")
	}
	emit(ch, d.reloads, prometheus.CounterValue, float64(st.Reloads))
	emit(ch, d.reloadErrors, prometheus.CounterValue, float64(st.ReloadErrors))
}

var _ prometheus.Collector = (*Collector)(nil)

// New returns a Collector for lim; register it with a prometheus.Registerer.
func New(lim *hybrid.Limiter, cfg Config) (*Collector, error) {
	if lim == nil {
		return nil, fmt.Errorf("%w: nil Limiter", ErrInvalidConfig)
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if !validNamespace.MatchString(cfg.Namespace) {
		return nil, fmt.Errorf("%w: namespace %q: want letters, digits and '_', not starting with a digit", ErrInvalidConfig, cfg.Namespace)
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(cfg.Namespace, "", name), help, labels, cfg.ConstLabels)
	}
	c := &Collector{
		lim:          lim,
		http:         cfg.HTTP,
		grpc:         cfg.GRPC,
		decisions:    desc("decisions_total", "Requests answered by the limiter, by what decided (source) and outcome.", "source", "outcome"),
		calls:        desc("node_calls_total", "Round trips to a Redis node.", "node"),
		errs:         desc("node_errors_total", "Round trips to a Redis node that failed, timeouts included.", "node"),
		batched:      desc("node_batched_total", "Requests decided in round trips of more than one request.", "node"),
		latency:      desc("node_latency_seconds", "Round-trip time to a Redis node.", "node"),
		breaker:      desc("node_breaker_state", "State of a node's circuit breaker: 1 for the current state.", "node", "state"),
		opened:       desc("node_breaker_opened_total", "Times a node's circuit breaker opened.", "node"),
		degraded:     desc("node_degraded", "1 while a node's keys are answered by the failure mode (fallback active).", "node"),
		leaseKeys:    desc("lease_keys", "Keys served from leases."),
		leaseUnits:   desc("lease_units", "Units held in leases: the most the limits may be exceeded by at this moment, and the units other instances cannot have meanwhile."),
		leaseLost:    desc("lease_units_lost_total", "Units leased that were, for certain, neither spent nor given back (a give-back not sent, or whose node left the ring)."),
		leaseUnknown: desc("lease_units_unknown_total", "Units of lease batches and give-backs that were sent and got no answer in time: they may or may not have run on Redis."),
		denyKeys:     desc("deny_cache_keys", "Keys the denial cache holds."),
		undecided:    desc("node_undecided_total", "Answers for a node's keys given by the failure mode, by why Redis did not decide them.", "node", "reason"),
		noNode:       desc("undecided_no_node_total", "Answers given by the failure mode because the ring had no node."),
		mayEvict:     desc("node_may_evict", "1 when a node's maxmemory-policy can evict limiter keys (a maxmemory is set and the policy is not noeviction); policy is \"\" where CONFIG GET is not allowed.", "node", "policy"),
	}
	if c.http != nil {
		c.httpRules = newRuleDescs(desc, "http", "HTTP requests")
	}
	if c.grpc != nil {
		c.grpcRules = newRuleDescs(desc, "grpc", "gRPC calls (and stream messages)")
	}
	return c, nil
}

// Describe sends the descriptors of every metric the Collector emits.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.decisions, c.calls, c.errs, c.batched, c.latency, c.breaker, c.opened, c.degraded, c.leaseKeys, c.leaseUnits, c.leaseLost, c.leaseUnknown, c.denyKeys, c.undecided, c.noNode, c.mayEvict} {
		ch <- d
	}
	if c.http != nil {
		c.httpRules.describe(ch)
	}
	if c.grpc != nil {
		c.grpcRules.describe(ch)
	}
}

// breakerStates are the states a breaker reports in NodeStats.Breaker.
var breakerStates = [...]string{"closed", "open", "half-open"}

// sources are every Source, so that each series exists from the start.
var sources = hybrid.Sources()

// nodeReasons are the reasons counted per node (every one but no-node).
var nodeReasons = func() []hybrid.Reason {
	var out []hybrid.Reason
	for _, r := range hybrid.Reasons() {
		if r != hybrid.ReasonNoNode {
			out = append(out, r)
		}
	}
	return out
}()

// Collect reads the Limiter's (and the middlewares') counters and sends
// them as constant metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.lim.Stats()
	for _, src := range sources {
		n, d := st.Decisions[src], st.Denied[src]
		emit(ch, c.decisions, prometheus.CounterValue, float64(n-d), src.String(), "allowed")
		emit(ch, c.decisions, prometheus.CounterValue, float64(d), src.String(), "denied")
	}
	for _, n := range st.Nodes {
		emit(ch, c.calls, prometheus.CounterValue, float64(n.Calls), n.Name)
		emit(ch, c.errs, prometheus.CounterValue, float64(n.Errors), n.Name)
		emit(ch, c.batched, prometheus.CounterValue, float64(n.Batched), n.Name)
		emit(ch, c.opened, prometheus.CounterValue, float64(n.Opened), n.Name)
		emit(ch, c.degraded, prometheus.GaugeValue, bool01(n.Degraded), n.Name)
		emit(ch, c.mayEvict, prometheus.GaugeValue, bool01(n.MayEvict), n.Name, n.EvictionPolicy)
		for _, r := range nodeReasons {
			emit(ch, c.undecided, prometheus.CounterValue, float64(n.Undecided[r]), n.Name, r.String())
		}
		for _, s := range breakerStates {
			emit(ch, c.breaker, prometheus.GaugeValue, bool01(n.Breaker == s), n.Name, s)
		}
		count, sum, buckets := histogram(n.Latency)
		m, err := prometheus.NewConstHistogram(c.latency, count, sum, buckets, n.Name)
		if err != nil {
			m = prometheus.NewInvalidMetric(c.latency, err)
		}
		ch <- m
	}
	emit(ch, c.noNode, prometheus.CounterValue, float64(st.Undecided[hybrid.ReasonNoNode]))
	emit(ch, c.leaseKeys, prometheus.GaugeValue, float64(st.Leases))
	emit(ch, c.leaseUnits, prometheus.GaugeValue, float64(st.LeaseUnits))
	emit(ch, c.leaseLost, prometheus.CounterValue, float64(st.LeaseUnitsLost))
	emit(ch, c.leaseUnknown, prometheus.CounterValue, float64(st.LeaseUnitsUnknown))
	emit(ch, c.denyKeys, prometheus.GaugeValue, float64(st.DenyCacheKeys))

	if c.http != nil {
		c.httpRules.collect(ch, c.http.Stats())
	}
	if c.grpc != nil {
		c.grpcRules.collect(ch, c.grpc.Stats())
	}
}

// emit sends one constant metric; a label value Prometheus refuses (a node
// name that is not UTF-8) is reported at the scrape rather than panicking.
func emit(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(d, err)
	}
	ch <- m
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// histogram converts hybrid's non-cumulative latency histogram to
// Prometheus's form: cumulative counts by upper bound in seconds (the last
// bucket, above every bound, is the +Inf one Prometheus derives from
// count).
func histogram(l hybrid.Latency) (count uint64, sum float64, buckets map[float64]uint64) {
	buckets = make(map[float64]uint64, len(l.Bounds))
	var cum uint64
	for i, b := range l.Bounds {
		if i < len(l.Counts) {
			cum += uint64(max(l.Counts[i], 0))
		}
		buckets[b.Seconds()] = cum
	}
	for _, n := range l.Counts[min(len(l.Bounds), len(l.Counts)):] {
		cum += uint64(max(n, 0))
	}
	return cum, l.Sum.Seconds(), buckets
}
