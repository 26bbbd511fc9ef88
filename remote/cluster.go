package remote

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Store on a Redis Cluster routes its commands itself. The user's
// *redis.ClusterClient lends its options (seed addresses, credentials,
// TLS, dialer, pool size, its NewClient and ClusterSlots); the Store reads
// the slot map (CLUSTER SLOTS of a live member), keeps a client of its own
// for each master, bounded as BoundOptions bounds one (no retries, short
// timeouts, context deadlines that end socket reads), and follows the
// cluster's routing answers inside the caller's budget:
//
//   - MOVED: the slot has a new owner. The slot map is corrected at once
//     (and reloaded in the background) and the command is sent there.
//   - ASK: the slot is being migrated and the key is on the importing
//     master. ASKING and the command go there, in one round trip.
//   - TRYAGAIN: a request whose keys the migration has split; it is sent
//     again, to the slot's owner, after tryAgainPause.
//
// Redis sent each of them instead of running the script, so sending the
// command again never charges twice. Nothing else is resent: a network
// error or a timeout may have followed a run. None of the routing answers
// is a failure of the node (hybrid counts none on a breaker); a request
// still unanswered when its budget ends fails with an error that wraps
// ErrCluster. CLUSTERDOWN, which every master answers while the cluster
// lacks a master for some slot (cluster-require-full-coverage yes: from
// when a master is marked failed until its replica is promoted, and for
// about a cluster cron tick of a manual failover), is no failure of the
// node either: the cluster refuses, the master is up. It is waited out
// like TRYAGAIN until it has lasted clusterDownPatience, and fails at once
// (ErrCluster) after that, until some member answers again.
//
// The slot map is reloaded, from the first member that answers, after
// MOVED, CLUSTERDOWN and any failure (Refresh), at most once per
// refreshEvery: a replica promoted after its master died is found within
// that of the next failed request, whatever the user's client does with
// its own map. go-redis's client follows redirects only if its
// MaxRedirects allows, resends scripts after network errors and timeouts
// too (a double charge), and reloads its map only when a MOVED reply or
// its ClusterStateReloadInterval (60 s by default) says so; routing here
// does not depend on any of that.

// NumSlots is the number of hash slots of a Redis Cluster.
const NumSlots = 16384

// maxRedirects is how many redirections (MOVED, ASK) and reloads of the
// Lua code one command may meet before it fails. A migration costs a
// request at most two (ASK, then MOVED once the slot is handed over); the
// rest is margin for maps that disagree while a failover settles.
const maxRedirects = 8

// tryAgainPause is how long a request split by a migration (TRYAGAIN)
// waits before it is sent again: redis-cli moves a slot's keys ten at a
// time, a MIGRATE round trip each, so a few milliseconds see most slots
// through. TRYAGAIN is answered again until the request's budget ends (or
// maxTryAgain, for a context without a deadline).
const (
	tryAgainPause = 2 * time.Millisecond
	maxTryAgain   = time.Second
)

// clusterDownPatience is how long a Store waits out CLUSTERDOWN: a
// request that meets it is sent again every tryAgainPause (within its
// budget) until the cluster has answered CLUSTERDOWN for this long, and
// after that fails at once, until some member answers again. A manual
// failover (CLUSTER FAILOVER) makes the new master refuse for about a
// cluster cron tick (100 ms); a dead master's slots, until its replica
// is promoted (seconds).
const clusterDownPatience = 300 * time.Millisecond

// reloadTimeout bounds one reload of the slot map, over every member it
// tries.
const reloadTimeout = 2 * time.Second

// ErrCluster wraps the error of a request that a Redis Cluster did not run:
// CLUSTERDOWN, or routing answers (MOVED, ASK, TRYAGAIN) beyond
// maxRedirects or the request's budget. The node did nothing wrong.
var ErrCluster = errors.New("remote: the cluster did not run the request")

// member is one server of the cluster, with the Store's client for it.
type member struct {
	addr   string
	client *redis.Client
}

// slotTable names the master of every slot: the members, and for each
// slot an index into them, plus one (0: no master known).
type slotTable struct {
	owner   [NumSlots]uint16
	masters []*member
}

// cluster is what a Store on a Redis Cluster keeps: the slot map and a
// client per member.
type cluster struct {
	seeds     []string
	opt       *redis.Options // a member's options, but for Addr
	newClient func(*redis.Options) *redis.Client
	slotsFn   func(context.Context) ([]redis.ClusterSlot, error) // the user's ClusterSlots, or nil

	table atomic.Pointer[slotTable]

	mu      sync.Mutex
	members map[string]*member // by address; closed by close
	closed  bool

	ctx       context.Context // ends at close: reloads in flight stop
	cancel    context.CancelFunc
	reloads   sync.WaitGroup
	refreshed atomic.Int64 // unix ns of the last reload started by refresh
	reloading atomic.Bool
	downSince atomic.Int64 // unix ns of the first CLUSTERDOWN since a member last answered; 0: none
}

// down notes a CLUSTERDOWN at now and reports whether it is still to be
// waited out (clusterDownPatience has not passed since the first).
func (c *cluster) down(now time.Time) bool {
	t := now.UnixNano()
	if c.downSince.CompareAndSwap(0, t) {
		return true
	}
	return t-c.downSince.Load() < int64(clusterDownPatience)
}

// up notes that a member answered.
func (c *cluster) up() {
	if c.downSince.Load() != 0 {
		c.downSince.Store(0)
	}
}

// newCluster reads what routing needs from the user's client.
func newCluster(cc *redis.ClusterClient) *cluster {
	o := cc.Options()
	ctx, cancel := context.WithCancel(context.Background())
	c := &cluster{
		seeds:     append([]string(nil), o.Addrs...),
		opt:       memberOptions(o),
		newClient: o.NewClient,
		slotsFn:   o.ClusterSlots,
		members:   map[string]*member{},
		ctx:       ctx,
		cancel:    cancel,
	}
	if c.newClient == nil {
		c.newClient = redis.NewClient
	}
	return c
}

// memberOptions are the options of the Store's client for one member: the
// cluster client's connection settings, bounded by BoundOptions.
func memberOptions(o *redis.ClusterOptions) *redis.Options {
	return BoundOptions(&redis.Options{
		ClientName:                   o.ClientName,
		Dialer:                       o.Dialer,
		OnConnect:                    o.OnConnect,
		Protocol:                     o.Protocol,
		Username:                     o.Username,
		Password:                     o.Password,
		CredentialsProvider:          o.CredentialsProvider,
		CredentialsProviderContext:   o.CredentialsProviderContext,
		StreamingCredentialsProvider: o.StreamingCredentialsProvider,
		DialTimeout:                  o.DialTimeout,
		ReadTimeout:                  o.ReadTimeout,
		WriteTimeout:                 o.WriteTimeout,
		PoolFIFO:                     o.PoolFIFO,
		PoolSize:                     o.PoolSize,
		PoolTimeout:                  o.PoolTimeout,
		MinIdleConns:                 o.MinIdleConns,
		MaxIdleConns:                 o.MaxIdleConns,
		MaxActiveConns:               o.MaxActiveConns,
		ConnMaxIdleTime:              o.ConnMaxIdleTime,
		ConnMaxLifetime:              o.ConnMaxLifetime,
		ReadBufferSize:               o.ReadBufferSize,
		WriteBufferSize:              o.WriteBufferSize,
		TLSConfig:                    o.TLSConfig,
		IdentitySuffix:               o.IdentitySuffix,
	})
}

// member returns the member at addr, making its client on first use, or
// nil once the cluster is closed.
func (c *cluster) member(addr string) *member {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if m := c.members[addr]; m != nil {
		return m
	}
	o := *c.opt
	o.Addr = addr
	m := &member{addr: addr, client: c.newClient(&o)}
	c.members[addr] = m
	return m
}

// owner returns the master of slot as the map has it, or nil.
func (c *cluster) owner(slot int) *member {
	t := c.table.Load()
	if t == nil || t.owner[slot] == 0 {
		return nil
	}
	return t.masters[t.owner[slot]-1]
}

// masters returns the masters the map names, in no particular order.
func (c *cluster) masters() []*member {
	if t := c.table.Load(); t != nil {
		return t.masters
	}
	return nil
}

// moved records a MOVED reply: slot's owner is m now. The map is copied
// with that one slot changed, and published; a reload follows.
func (c *cluster) moved(slot int, m *member) {
	for {
		old := c.table.Load()
		if old != nil && old.owner[slot] != 0 && old.masters[old.owner[slot]-1] == m {
			return
		}
		t := &slotTable{}
		if old != nil {
			t.owner = old.owner
			t.masters = old.masters
		}
		i := indexOf(t.masters, m)
		if i < 0 {
			t.masters = append(t.masters[:len(t.masters):len(t.masters)], m)
			i = len(t.masters) - 1
		}
		t.owner[slot] = uint16(i + 1)
		if c.table.CompareAndSwap(old, t) {
			return
		}
	}
}

func indexOf(ms []*member, m *member) int {
	for i, x := range ms {
		if x == m {
			return i
		}
	}
	return -1
}

// load reads the slot map from the first member that answers (the
// masters the map names, in random order, then the seeds), or from the
// user's ClusterSlots, and publishes it. A slot that no range names has no
// master.
func (c *cluster) load(ctx context.Context) error {
	if c.slotsFn != nil {
		slots, err := c.slotsFn(ctx)
		if err != nil {
			return err
		}
		return c.publish(slots, "")
	}
	var addrs []string
	ms := c.masters()
	for _, i := range rand.Perm(len(ms)) {
		addrs = append(addrs, ms[i].addr)
	}
	for _, i := range rand.Perm(len(c.seeds)) {
		if !slices.Contains(addrs, c.seeds[i]) {
			addrs = append(addrs, c.seeds[i])
		}
	}
	var errs []error
	for _, a := range addrs {
		if ctx.Err() != nil {
			break
		}
		m := c.member(a)
		if m == nil {
			return errClosed
		}
		//lint:ignore SA1019 CLUSTER SHARDS needs Redis 7; CLUSTER SLOTS answers on every version we support
		slots, err := m.client.ClusterSlots(ctx).Result()
		if err == nil {
			err = c.publish(slots, a)
		}
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", a, err))
	}
	return fmt.Errorf("remote: no member of the cluster gave its slot map: %w", errors.Join(append(errs, ctx.Err())...))
}

var errClosed = errors.New("remote: store closed")

// publish builds a map from a CLUSTER SLOTS reply that origin gave (""
// for the user's ClusterSlots) and swaps it in.
func (c *cluster) publish(slots []redis.ClusterSlot, origin string) error {
	t := &slotTable{}
	for _, r := range slots {
		if len(r.Nodes) == 0 || r.Start < 0 || r.End >= NumSlots || r.Start > r.End {
			continue
		}
		m := c.member(memberAddr(r.Nodes[0].Addr, origin))
		if m == nil {
			return errClosed
		}
		i := indexOf(t.masters, m)
		if i < 0 {
			t.masters = append(t.masters, m)
			i = len(t.masters) - 1
		}
		for s := r.Start; s <= r.End; s++ {
			t.owner[s] = uint16(i + 1)
		}
	}
	if len(t.masters) == 0 {
		return fmt.Errorf("%w: CLUSTER SLOTS names no master", ErrReply)
	}
	c.table.Store(t)
	return nil
}

// memberAddr is the address to dial for addr, as a member that is
// reached at origin named it: a loopback or empty host there means
// origin's host (a member behind NAT, or one that does not know its IP),
// and port 0 origin's port (a TLS-only member), as go-redis reads them.
func memberAddr(addr, origin string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		// MOVED and ASK give an IPv6 address without brackets.
		i := strings.LastIndexByte(addr, ':')
		if i < 0 {
			return addr
		}
		host, port = addr[:i], addr[i+1:]
	}
	oh, op, err := net.SplitHostPort(origin)
	if err == nil {
		if ip := net.ParseIP(host); host == "" || host == "?" || (ip != nil && ip.IsLoopback() && !isLoopbackHost(oh)) {
			host = oh
		}
		if port == "0" {
			port = op
		}
	}
	return net.JoinHostPort(host, port)
}

func isLoopbackHost(h string) bool {
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback()
	}
	return strings.EqualFold(h, "localhost")
}

// refresh reloads the slot map in the background, at most once per
// refreshEvery and one reload at a time.
func (c *cluster) refresh() {
	now := time.Now().UnixNano()
	last := c.refreshed.Load()
	if now-last < int64(refreshEvery) || !c.refreshed.CompareAndSwap(last, now) {
		return
	}
	if !c.reloading.CompareAndSwap(false, true) {
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.reloading.Store(false)
		return
	}
	c.reloads.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.reloads.Done()
		defer c.reloading.Store(false)
		ctx, cancel := context.WithTimeout(c.ctx, reloadTimeout)
		defer cancel()
		_ = c.load(ctx) // a failed reload is tried again at the next failure
	}()
}

// close stops reloads and closes every member's client.
func (c *cluster) close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.reloads.Wait()
	var errs []error
	for _, m := range c.members {
		errs = append(errs, m.client.Close())
	}
	return errors.Join(errs...)
}

// routing is what a reply error says about where to send the command.
type routing int

const (
	routeNone        routing = iota // not a routing answer
	routeMoved                      // MOVED slot addr
	routeAsk                        // ASK slot addr
	routeTryAgain                   // TRYAGAIN
	routeClusterDown                // CLUSTERDOWN
)

// routeOf reads a routing answer from err, and the address it names.
func routeOf(err error) (routing, string) {
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return routeNone, ""
	}
	msg := re.Error()
	switch {
	case strings.HasPrefix(msg, "MOVED "), strings.HasPrefix(msg, "ASK "):
		f := strings.Fields(msg)
		if len(f) != 3 {
			return routeNone, ""
		}
		if f[0] == "ASK" {
			return routeAsk, f[2]
		}
		return routeMoved, f[2]
	case strings.HasPrefix(msg, "TRYAGAIN"):
		return routeTryAgain, ""
	case strings.HasPrefix(msg, "CLUSTERDOWN"):
		return routeClusterDown, ""
	}
	return routeNone, ""
}

// routed is one command on its way through the cluster.
type routed struct {
	slot  int                // of its keys; -1: any master
	build func() redis.Cmder // makes the command afresh for each send
	sc    *script            // its script, where it runs one (nil: none)
	cmd   redis.Cmder        // the command last sent, with its reply
	to    *member            // where to send it next (nil: the slot's owner)
	ask   bool               // send ASKING before it
	at    *member            // where it was last sent
	hops  int                // redirections and code reloads met
	last  routing            // the last routing answer, if it ended there
	moved bool               // it followed a routing answer
}

// send sends rs and follows their routing answers until each has a final
// reply, its redirections are spent or ctx ends.
func (s *Store) send(ctx context.Context, rs []*routed) {
	_ = s.cl.ready(ctx) // without a map, each command fails with no master
	giveUp, ok := ctx.Deadline()
	if !ok {
		giveUp = time.Now().Add(maxTryAgain)
	}
	for len(rs) > 0 {
		s.sendOnce(ctx, rs)
		var again []*routed
		pause := false
		loaded := map[*member]bool{} // the code loaded there, this round
		for _, r := range rs {
			if s.follow(ctx, r, giveUp, loaded) {
				again = append(again, r)
				pause = pause || r.last == routeTryAgain || r.last == routeClusterDown || r.hops > maxRedirects
			}
		}
		if pause {
			t := time.NewTimer(tryAgainPause)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		rs = again
	}
}

// sendOnce sends each of rs where it goes next (its slot's owner unless
// told otherwise), one pipeline per member, side by side when there are
// several.
func (s *Store) sendOnce(ctx context.Context, rs []*routed) {
	c := s.cl
	groups := map[*member][]*routed{}
	var order []*member
	for _, r := range rs {
		r.cmd = r.build()
		m := r.to
		switch {
		case m != nil:
		case r.slot >= 0:
			m = c.owner(r.slot)
		default:
			if ms := c.masters(); len(ms) > 0 {
				m = ms[rand.IntN(len(ms))]
			}
		}
		r.at, r.to = m, nil
		if m == nil {
			r.cmd.SetErr(fmt.Errorf("remote: no master known for slot %d", r.slot))
			c.refresh()
			continue
		}
		if groups[m] == nil {
			order = append(order, m)
		}
		groups[m] = append(groups[m], r)
	}
	if len(order) == 1 {
		sendTo(ctx, order[0], groups[order[0]])
		return
	}
	var wg sync.WaitGroup
	for _, m := range order {
		wg.Go(func() { sendTo(ctx, m, groups[m]) })
	}
	wg.Wait()
}

// follow reads r's reply and reports whether r is to be sent again: after
// MOVED (to the new owner, whose slot the map now names), ASK (to the
// importing master, after ASKING), TRYAGAIN (to the slot's owner, while
// the budget lasts past giveUp), or a member without the Lua code (loaded
// there, once per round in loaded). Anything else is final, and so is
// CLUSTERDOWN, which has the map reloaded.
func (s *Store) follow(ctx context.Context, r *routed, giveUp time.Time, loaded map[*member]bool) bool {
	c := s.cl
	if r.at == nil {
		return false // no master was known
	}
	err := r.cmd.Err()
	route, addr := routeOf(err)
	r.last = route
	now := time.Now()
	switch {
	case err == nil:
		c.up()
		return false
	case route == routeClusterDown:
		// A moment of CLUSTERDOWN (a manual failover has one) is waited
		// out like TRYAGAIN; once it has lasted clusterDownPatience
		// (a master died, and its replica is not promoted yet), the
		// requests fail at once.
		c.refresh()
		if !c.down(now) || !time.Now().Add(tryAgainPause).Before(giveUp) {
			return false
		}
	case route == routeNone && !missing(r.cmd):
		return false // not routing: the reply stands, resending could charge twice
	case route == routeTryAgain:
		if !time.Now().Add(tryAgainPause).Before(giveUp) {
			return false
		}
	default:
		if r.hops++; r.hops > maxRedirects && !time.Now().Add(tryAgainPause).Before(giveUp) {
			return false
		}
	}
	if ctx.Err() != nil {
		return false
	}
	if route != routeNone {
		r.moved = true
	}
	switch route {
	case routeMoved, routeAsk:
		m := c.member(memberAddr(addr, r.at.addr))
		if m == nil {
			return false
		}
		if route == routeMoved {
			if r.slot >= 0 {
				c.moved(r.slot, m)
			}
			c.refresh()
		}
		r.to, r.ask = m, route == routeAsk
	case routeTryAgain, routeClusterDown:
		// Back to the slot's owner, which sends it on again if it must:
		// the migration may have ended meanwhile.
		r.ask = false
	default: // the member lacks the Lua code: load it, send again
		ok, done := loaded[r.at]
		if !done {
			ok = s.loadOn(ctx, r.at, r.sc)
			loaded[r.at] = ok
		}
		if !ok {
			return false
		}
		r.to = r.at
	}
	return true
}

// sendTo sends rs to m in one round trip: one command alone, several in a
// pipeline, each after ASKING where it was asked to go there.
func sendTo(ctx context.Context, m *member, rs []*routed) {
	if len(rs) == 1 && !rs[0].ask {
		_ = m.client.Process(ctx, rs[0].cmd) // the error is the command's
		return
	}
	_, _ = m.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, r := range rs {
			if r.ask {
				_ = p.Process(ctx, redis.NewStatusCmd(ctx, "asking"))
			}
			_ = p.Process(ctx, r.cmd)
		}
		return nil
	})
}

// err is the error a routed command ends with: its reply's, wrapped in
// ErrCluster where the cluster did not run it (CLUSTERDOWN, or a routing
// answer it could not follow further, or a last try after routing answers
// that ran out of budget).
func (r *routed) err() error {
	err := r.cmd.Err()
	var ne net.Error
	timedOut := errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
	if err != nil && (r.last != routeNone || r.moved && timedOut) {
		// A budget spent following the cluster's answers, to a last try
		// that could not finish, is the cluster's doing too.
		return fmt.Errorf("%w: %w", ErrCluster, err)
	}
	return err
}

// loadOn loads the Lua code onto member m after a call there found it
// missing: the library, or sc where the store runs scripts (switching to
// scripts where m has no functions). It reports whether the call may be
// sent again.
func (s *Store) loadOn(ctx context.Context, m *member, sc *script) bool {
	if s.fn.Load() {
		err := m.client.FunctionLoad(ctx, s.scripts.lib.src).Err()
		if err == nil || isLoaded(err) {
			return true
		}
		if !lacksFunctions(err) {
			return false
		}
		s.fn.Store(false)
	}
	if sc == nil {
		return false
	}
	return m.client.ScriptLoad(ctx, sc.src).Err() == nil
}

// KeySlot is the Redis Cluster hash slot of a Redis key, as CLUSTER
// KEYSLOT computes it: the CRC16 of its hash tag (the bytes between the
// first '{' and the first '}' after it, if not empty), else of the whole
// key, modulo NumSlots.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % NumSlots)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021), as Redis Cluster hashes keys.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}

var crc16Table = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

// Caveat is an option of a user's client that the Store cannot undo, and
// what it costs.
type Caveat struct {
	// Option names the option, as the user wrote it.
	Option string
	// Problem says what it does to the limiter; Fix what to do instead.
	Problem, Fix string
}

// Caveats reports the options of the client given to New that routing
// cannot work around, for the caller to log at startup: on a Redis
// Cluster, a ClusterSlots function (the slot map comes from it, not from
// the cluster) and a NewClient that changes the bounds given to a
// member's client.
func (s *Store) Caveats() []Caveat {
	c := s.cl
	if c == nil {
		return nil
	}
	var out []Caveat
	if c.slotsFn != nil {
		out = append(out, Caveat{
			Option:  "ClusterOptions.ClusterSlots",
			Problem: "the slot map is read from it, not from the cluster: a failover or a reshard is followed only as soon as it reports it",
			Fix:     "leave ClusterSlots nil for a real Redis Cluster",
		})
	}
	probe := c.newClient(c.opt)
	defer probe.Close()
	o := probe.Options()
	if o.MaxRetries > 0 {
		out = append(out, Caveat{
			Option:  "ClusterOptions.NewClient",
			Problem: "it gives a member's client MaxRetries " + strconv.Itoa(o.MaxRetries) + ": a script whose reply timed out is sent again, and charged twice",
			Fix:     "have NewClient keep the options it is given (remote.BoundOptions applied)",
		})
	}
	if !o.ContextTimeoutEnabled {
		out = append(out, Caveat{
			Option:  "ClusterOptions.NewClient",
			Problem: "it turns ContextTimeoutEnabled off: a request's deadline no longer ends a socket read, and a stopped master holds calls for its ReadTimeout",
			Fix:     "have NewClient keep the options it is given (remote.BoundOptions applied)",
		})
	}
	return out
}

// ready loads the slot map if none is loaded yet.
func (c *cluster) ready(ctx context.Context) error {
	if c.table.Load() != nil {
		return nil
	}
	return c.load(ctx)
}
