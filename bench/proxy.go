package main

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Bounds of a proxy: every loop it runs ends after a bounded number of
// rounds, and all of them end when it is closed.
const (
	proxyDialTimeout = time.Second // dialling the node for a new connection
	proxyChunk       = 32 << 10    // the most bytes read at once from either side
	proxyQueue       = 256         // reply chunks held per connection; the node's reads wait beyond
	maxProxyConns    = 1 << 20     // connections accepted over a proxy's life
	maxProxyChunks   = 1 << 30     // chunks carried per direction of one connection
	proxyAcceptPause = 5 * time.Millisecond
)

// proxy is a TCP proxy on a loopback port in front of one node, for the
// faults that act on the path to a node rather than on the node itself:
// -fault slow delays its replies, -fault flap takes the path down and up.
//
// Requests pass at once. Each chunk of a reply is held for the delay in
// force when it was read (setDelay), and chunks leave in the order they
// came: a chunk never overtakes the one before it, so a chunk waits at
// least its own delay and at most the largest delay drawn since the
// previous chunk was due. While down (setDown), every connection is closed
// with a reset and new ones are refused: accepted and reset at once, so
// that the port stays the proxy's and no other socket can take it.
//
// A proxy is safe for concurrent use. close stops it: it returns when every
// goroutine the proxy started has ended.
type proxy struct {
	target string // the node's address
	ln     net.Listener
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[*pipe]struct{}
	down   bool
	closed bool
	delay  time.Duration
	jitter float64    // the delay of a chunk is delay × (1 ± jitter), uniformly
	rng    *rand.Rand // draws the jitter; seeded, so a run draws the same delays
}

// pipe is one client connection and the proxy's connection to the node
// for it.
type pipe struct {
	client, node net.Conn
	done         chan struct{} // closed by close
	once         sync.Once
}

// chunk is part of a reply and when it may be written to the client.
type chunk struct {
	data []byte
	due  time.Time
}

// newProxy starts a proxy for target on a free port of 127.0.0.1, up and
// with no delay. seed seeds the draws of the jitter.
func newProxy(target string, seed uint64) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{target: target, ln: ln, conns: map[*pipe]struct{}{}, rng: rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d))}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// addr is where clients connect to reach the node through the proxy.
func (p *proxy) addr() string { return p.ln.Addr().String() }

// setDelay makes every reply chunk read from now on wait d × (1 ± jitter),
// jitter in [0, 1]; 0, 0 passes replies on at once.
func (p *proxy) setDelay(d time.Duration, jitter float64) {
	p.mu.Lock()
	p.delay, p.jitter = d, min(max(jitter, 0), 1)
	p.mu.Unlock()
}

// nextDelay draws the delay of one chunk.
func (p *proxy) nextDelay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.delay <= 0 || p.jitter == 0 {
		return max(p.delay, 0)
	}
	return time.Duration(float64(p.delay) * (1 + p.jitter*(2*p.rng.Float64()-1)))
}

// setDown takes the path down (every connection is reset, new ones are
// refused) or brings it up again.
func (p *proxy) setDown(down bool) {
	p.mu.Lock()
	p.down = down
	var cut map[*pipe]struct{}
	if down && !p.closed {
		cut, p.conns = p.conns, map[*pipe]struct{}{}
	}
	p.mu.Unlock()
	for pp := range cut {
		pp.close()
	}
}

// close stops the proxy: the listener and every connection are closed,
// and it returns once all its goroutines have ended. It is idempotent.
func (p *proxy) close() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	for pp := range conns {
		pp.close()
	}
	p.wg.Wait()
}

// serve accepts connections until the listener is closed.
func (p *proxy) serve() {
	defer p.wg.Done()
	for range maxProxyConns {
		c, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Out of file descriptors, say: wait a little, as net/http does.
			time.Sleep(proxyAcceptPause)
			continue
		}
		p.mu.Lock()
		refuse := p.down || p.closed
		if !refuse {
			p.wg.Add(1)
		}
		p.mu.Unlock()
		if refuse {
			reset(c)
			continue
		}
		go p.open(c)
	}
}

// open dials the node for client connection c and starts carrying bytes
// both ways.
func (p *proxy) open(c net.Conn) {
	defer p.wg.Done()
	n, err := net.DialTimeout("tcp", p.target, proxyDialTimeout)
	if err != nil {
		reset(c)
		return
	}
	pp := &pipe{client: c, node: n, done: make(chan struct{})}
	p.mu.Lock()
	if p.down || p.closed {
		p.mu.Unlock()
		pp.close()
		return
	}
	p.conns[pp] = struct{}{}
	p.wg.Add(3)
	p.mu.Unlock()
	replies := make(chan chunk, proxyQueue)
	go p.forward(pp)
	go p.readReplies(pp, replies)
	go p.writeReplies(pp, replies)
}

// forward copies requests from the client to the node, at once.
func (p *proxy) forward(pp *pipe) {
	defer p.wg.Done()
	defer p.drop(pp)
	buf := make([]byte, proxyChunk)
	for range maxProxyChunks {
		n, err := pp.client.Read(buf)
		if n > 0 {
			if _, werr := pp.node.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// readReplies reads the node's replies and stamps each chunk with when it
// may leave, never before the chunk ahead of it.
func (p *proxy) readReplies(pp *pipe, out chan<- chunk) {
	defer p.wg.Done()
	defer close(out)
	buf := make([]byte, proxyChunk)
	var last time.Time
	for range maxProxyChunks {
		n, err := pp.node.Read(buf)
		if n > 0 {
			due := time.Now().Add(p.nextDelay())
			if due.Before(last) {
				due = last
			}
			last = due
			select {
			case out <- chunk{data: bytes.Clone(buf[:n]), due: due}:
			case <-pp.done:
				return
			}
		}
		if err != nil {
			// The node closed the connection (or the pipe was closed):
			// the chunks already read still go out, then writeReplies
			// closes the pipe.
			return
		}
	}
}

// writeReplies writes each chunk to the client when it is due, in order.
func (p *proxy) writeReplies(pp *pipe, in <-chan chunk) {
	defer p.wg.Done()
	defer p.drop(pp)
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	for c := range in {
		if d := time.Until(c.due); d > 0 {
			t.Reset(d)
			select {
			case <-t.C:
			case <-pp.done:
				return
			}
		}
		if _, err := pp.client.Write(c.data); err != nil {
			return
		}
	}
}

// drop closes pp and forgets it.
func (p *proxy) drop(pp *pipe) {
	pp.close()
	p.mu.Lock()
	delete(p.conns, pp)
	p.mu.Unlock()
}

// close resets the client's connection and closes the node's; every
// goroutine of the pipe then ends. It is idempotent.
func (pp *pipe) close() {
	pp.once.Do(func() {
		close(pp.done)
		reset(pp.client)
		pp.node.Close()
	})
}

// reset closes c with a TCP reset rather than an orderly close: the peer
// sees "connection reset" at once, and no TIME_WAIT is left on the
// proxy's side.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}
