package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

const (
	// binEnv names the environment variable that overrides the
	// redis-server binary found on PATH.
	binEnv = "REDIS_SERVER_BIN"

	// startTimeout bounds the wait for a new process to answer PING.
	startTimeout = 5 * time.Second
	// pollInterval is the pause between two readiness probes.
	pollInterval = 10 * time.Millisecond
	// probeTimeout bounds one readiness probe (dial, write and read).
	probeTimeout = 250 * time.Millisecond
	// stopTimeout bounds the wait for an exit after SIGTERM or SIGKILL.
	stopTimeout = 5 * time.Second
	// signalStateTimeout bounds the wait for SIGSTOP or SIGCONT to show in
	// /proc.
	signalStateTimeout = time.Second

	// portAttempts is how many free ports Start tries before giving up.
	portAttempts = 5
	// restartAttempts and restartRetryDelay bound how long Restart retries
	// binding the same port.
	restartAttempts   = 20
	restartRetryDelay = 100 * time.Millisecond
)

// errAddrInUse marks a start that failed because the port was taken.
var errAddrInUse = errors.New("redistest: address already in use")

// errClosed is returned by Restart once Close has run (for Start, the
// test's cleanup).
var errClosed = errors.New("redistest: server closed")

// Option configures Launch, Start and StartN.
type Option func(*options)

type options struct {
	args     []string
	password string
	sentinel bool
}

// WithSentinel starts the process as a Redis Sentinel (redis-server
// <conf> --sentinel, the config file a fresh, empty one in its run
// directory), to be told what to monitor with SENTINEL MONITOR.
func WithSentinel() Option {
	return func(o *options) { o.sentinel = true }
}

// WithPassword starts the server with requirepass: clients must AUTH with
// password (Client does). The default is no password.
func WithPassword(password string) Option {
	return func(o *options) {
		o.password = password
		o.args = append(o.args, "--requirepass", password)
	}
}

// WithArgs appends command-line arguments to the redis-server command line.
// They come after the defaults, so they override them, for example
// WithArgs("--maxmemory", "1mb", "--maxmemory-policy", "allkeys-lru").
// The default is no extra arguments.
func WithArgs(args ...string) Option {
	return func(o *options) { o.args = append(o.args, args...) }
}

// Server is a redis-server process started by Launch or Start. Each start of the
// process (the first one and every Restart) gets a new, empty working
// directory, so no data survives a restart whatever the arguments.
//
// A Server is safe for concurrent use. Its methods return nil, doing
// nothing, when the process is not running (Stop, Kill, Pause, Resume) and
// never panic.
type Server struct {
	bin  string   // path of the redis-server binary
	args []string // extra arguments from WithArgs
	pass string   // the requirepass of WithPassword, or ""
	sent bool     // WithSentinel
	dir  string   // temporary directory holding one dir per run, removed by Close
	port int      // fixed for the life of the Server

	mu     sync.Mutex
	proc   *process // nil before the first successful start
	paused bool     // proc was sent SIGSTOP and not yet SIGCONT
	runs   int      // number of starts attempted, names the run dirs
	closed bool     // Close has run
}

// process is one redis-server process and the goroutine that reaps it.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd.Wait has returned
	err  error         // result of cmd.Wait, valid once done is closed
}

// Available reports whether a redis-server binary can be found, either at
// the path in REDIS_SERVER_BIN or on PATH. Start skips or fails a test,
// and Launch returns an error wrapping ErrNotFound, when it would return
// false.
func Available() bool {
	_, err := binary()
	return err == nil
}

// ErrNotFound is returned, wrapped, by Launch when no redis-server binary
// can be found (see Available).
var ErrNotFound = errors.New("redistest: redis-server not found")

// Launch starts a redis-server on a free port of 127.0.0.1, in a new
// temporary working directory, and waits until it answers PING. It is the
// form of Start for programs: the caller must call Close, which kills the
// process (resuming it first if it is paused), waits for it to exit and
// removes the directory.
//
// If no binary is found, the error wraps ErrNotFound. It tries a few free
// ports before giving up.
func Launch(opts ...Option) (*Server, error) {
	bin, err := binary()
	if err != nil {
		return nil, fmt.Errorf("%w (set %s or install it, for example apt-get install redis-server): %w", ErrNotFound, binEnv, err)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redistest: starting %s: %w", bin, err)
	}
	s := &Server{bin: bin, args: slices.Clone(o.args), pass: o.password, sent: o.sentinel, dir: dir}

	s.mu.Lock()
	defer s.mu.Unlock()
	for range portAttempts {
		s.port, err = freePort()
		if err != nil {
			break
		}
		s.proc, err = s.spawn()
		if !errors.Is(err, errAddrInUse) {
			break
		}
	}
	if err != nil {
		s.closed = true
		return nil, errors.Join(fmt.Errorf("redistest: starting %s: %w", bin, err), os.RemoveAll(dir))
	}
	return s, nil
}

// Start starts a redis-server with Launch and registers a cleanup on tb
// that calls Close.
//
// If no binary is found, Start fails the test when the environment
// variable CI is true and skips it otherwise. If the server cannot be
// started, Start fails the test. Like tb.Fatalf, Start must be called from
// the goroutine running the test.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s, err := Launch(opts...)
	if errors.Is(err, ErrNotFound) {
		if inCI() {
			tb.Fatalf("redis-server not found on PATH; CI must install it (apt-get install redis-server): %v", err)
		} else {
			tb.Skipf("redis-server not found on PATH (%v); install it (apt-get install redis-server) or set %s to run this test", err, binEnv)
		}
		return nil
	}
	if err != nil {
		tb.Fatalf("%v", err)
		return nil
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("redistest: cleanup: %v", err)
		}
	})
	return s
}

// StartN starts n servers with Start, each on its own port, all with the
// same options.
func StartN(tb testing.TB, n int, opts ...Option) []*Server {
	tb.Helper()
	if n < 0 {
		tb.Fatalf("redistest: StartN(%d): negative count", n)
		return nil
	}
	servers := make([]*Server, 0, n)
	for range n {
		s := Start(tb, opts...)
		if s == nil {
			return nil
		}
		servers = append(servers, s)
	}
	return servers
}

// Addr returns the server's address, "127.0.0.1:port". It does not change
// across Restart.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Port returns the server's TCP port. It does not change across Restart.
func (s *Server) Port() int {
	return s.port
}

// Client returns a go-redis client for the server, closed by a cleanup on
// tb. It has short timeouts (one second to dial, read and write), honours
// context deadlines (ContextTimeoutEnabled), and retries a failed dial
// only once, so that tests of a stopped or paused server fail fast. The
// client follows the server across Restart, reconnecting on its next
// command.
func (s *Server) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                  s.Addr(),
		Password:              s.pass,
		DialTimeout:           time.Second,
		DialerRetries:         1,
		DialerRetryTimeout:    10 * time.Millisecond,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
		PoolTimeout:           2 * time.Second,
		ContextTimeoutEnabled: true,
		DisableIdentity:       true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Running reports whether the process is alive, paused or not. It is false
// after Stop or Kill, and after the process exited by itself (for example
// on SHUTDOWN).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running()
}

// Paused reports whether the process is alive and stopped by Pause.
func (s *Server) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running() && s.paused
}

// Pid returns the process id, or 0 when the process is not running. It
// changes across Restart.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running() {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// Stop asks the server to shut down with SIGTERM (resuming it first if it
// is paused) and waits for it to exit. If it is still running after five
// seconds, Stop kills it and returns an error saying so.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running() {
		return nil
	}
	if err := s.resume(); err != nil {
		return err
	}
	p := s.proc
	if err := p.signal(syscall.SIGTERM); err != nil {
		return err
	}
	if p.wait(stopTimeout) {
		return nil
	}
	if err := p.kill(); err != nil {
		return err
	}
	return fmt.Errorf("redistest: redis-server (pid %d) still running %v after SIGTERM; killed it", p.cmd.Process.Pid, stopTimeout)
}

// Kill kills the server with SIGKILL (resuming it first if it is paused)
// and waits for it to exit. Clients then see their connections reset and
// new dials refused.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kill()
}

// kill resumes and kills the current process, if any. s.mu must be held.
func (s *Server) kill() error {
	if !s.running() {
		return nil
	}
	if err := s.resume(); err != nil {
		return err
	}
	return s.proc.kill()
}

// Pause freezes the server with SIGSTOP. The kernel still accepts
// connections, but nothing is answered until Resume, so clients time out
// rather than being refused. On Linux, Pause returns once the process is
// seen stopped. Pausing a paused server does nothing.
func (s *Server) Pause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running() || s.paused {
		return nil
	}
	if err := s.proc.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	s.paused = true
	return s.proc.awaitState(true)
}

// Resume continues a server frozen by Pause with SIGCONT. Resuming a server
// that is not paused does nothing.
func (s *Server) Resume() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resume()
}

// Restart kills the process if it is running (resuming it first if it is
// paused) and starts a fresh, empty one on the same port, then waits until
// it answers. All keys and the Lua script cache are lost. Restart also
// starts a server that was stopped or killed. It retries binding the port
// for about two seconds, and returns an error if the server does not come
// up or the server was closed (for Start, the test has finished).
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if s.running() {
		if err := s.resume(); err != nil {
			return err
		}
		if err := s.proc.kill(); err != nil {
			return err
		}
	}
	s.paused = false
	var err error
	for attempt := range restartAttempts {
		if attempt > 0 {
			time.Sleep(restartRetryDelay)
		}
		var p *process
		p, err = s.spawn()
		if err == nil {
			s.proc = p
			return nil
		}
		if !errors.Is(err, errAddrInUse) {
			break
		}
	}
	return fmt.Errorf("redistest: restarting redis-server on port %d: %w", s.port, err)
}

// Close kills the process if it is running (resuming it first if it is
// paused), waits for it to exit and removes the server's working
// directory. Afterwards Restart returns an error, so that no process is
// started that nobody would kill. Close is idempotent: later calls return
// nil. Start registers it as a test cleanup.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.kill(); err != nil {
		return err
	}
	return os.RemoveAll(s.dir)
}

// running reports whether the current process is alive. s.mu must be held.
func (s *Server) running() bool {
	return s.proc != nil && !s.proc.exited()
}

// resume sends SIGCONT if the process is paused. s.mu must be held.
func (s *Server) resume() error {
	if !s.running() || !s.paused {
		return nil
	}
	if err := s.proc.signal(syscall.SIGCONT); err != nil {
		return err
	}
	s.paused = false
	return s.proc.awaitState(false)
}

// spawn starts one process on s.port in a new run directory and waits
// until it answers. If the process exits because the port is taken, the
// error wraps errAddrInUse. s.mu must be held, or s not yet shared.
func (s *Server) spawn() (*process, error) {
	s.runs++
	runDir := filepath.Join(s.dir, "run"+strconv.Itoa(s.runs))
	if err := os.Mkdir(runDir, 0o700); err != nil {
		return nil, err
	}
	logPath := filepath.Join(runDir, "redis.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	var head []string
	if s.sent {
		conf := filepath.Join(runDir, "sentinel.conf")
		if err := os.WriteFile(conf, nil, 0o600); err != nil {
			return nil, err
		}
		head = []string{conf, "--sentinel"}
	}
	args := append(append(head,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", runDir,
		"--daemonize", "no",
		"--protected-mode", "yes",
		"--loglevel", "warning",
	), s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = runDir
	// An *os.File is handed to the child as is: os/exec starts no copying
	// goroutines, and the child keeps its own descriptor once ours is closed.
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	setParentDeathSignal(cmd.SysProcAttr)
	err = cmd.Start()
	logFile.Close()
	if err != nil {
		return nil, err
	}

	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := p.awaitReady(s.Addr(), s.pass); err != nil {
		if kerr := p.kill(); kerr != nil {
			err = errors.Join(err, kerr)
		}
		log, _ := os.ReadFile(logPath)
		if strings.Contains(string(log), "Address already in use") {
			err = fmt.Errorf("%w: %w", errAddrInUse, err)
		}
		return nil, fmt.Errorf("%w\nredis-server log (%s):\n%s", err, logPath, tail(log, 2048))
	}
	return p, nil
}

// awaitReady polls addr until this process answers PING, at most
// startTimeout and startTimeout/pollInterval times. It checks the pid the
// server reports, so that another server that won a race for the port is
// not mistaken for this one.
func (p *process) awaitReady(addr, password string) error {
	deadline := time.Now().Add(startTimeout)
	var err error
	for range int(startTimeout / pollInterval) {
		if p.exited() {
			return fmt.Errorf("redistest: redis-server exited before answering on %s: %v", addr, p.err)
		}
		var pid int
		pid, err = probe(addr, password)
		if err == nil {
			if pid == p.cmd.Process.Pid {
				return nil
			}
			err = fmt.Errorf("redistest: %s is served by pid %d, not %d", addr, pid, p.cmd.Process.Pid)
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-p.done:
		case <-time.After(pollInterval):
		}
	}
	if p.exited() {
		return fmt.Errorf("redistest: redis-server exited before answering on %s: %v", addr, p.err)
	}
	return fmt.Errorf("redistest: redis-server did not answer on %s within %v: %w", addr, startTimeout, err)
}

// probe sends PING and INFO server over a raw connection (after AUTH when
// password is set) and returns the process_id the server reports once it
// answers +PONG.
func probe(addr, password string) (int, error) {
	conn, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(probeTimeout)); err != nil {
		return 0, err
	}
	req := "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"
	if password != "" {
		req = fmt.Sprintf("*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(password), password) + req
	}
	if _, err := io.WriteString(conn, req); err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)
	if password != "" {
		if line, err := r.ReadString('\n'); err != nil {
			return 0, err
		} else if line != "+OK\r\n" {
			return 0, fmt.Errorf("redistest: AUTH replied %q", strings.TrimSpace(line))
		}
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if line != "+PONG\r\n" {
		return 0, fmt.Errorf("redistest: PING replied %q", strings.TrimSpace(line))
	}
	line, err = r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(line, "$"), "\r\n"))
	if !strings.HasPrefix(line, "$") || err != nil || n < 0 || n > 1<<20 {
		return 0, fmt.Errorf("redistest: INFO replied %q", strings.TrimSpace(line))
	}
	info := make([]byte, n)
	if _, err := io.ReadFull(r, info); err != nil {
		return 0, err
	}
	for field := range strings.Lines(string(info)) {
		if v, ok := strings.CutPrefix(field, "process_id:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("redistest: INFO server has no process_id")
}

// exited reports whether the process has exited and been reaped.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig, treating a process that has already exited as success.
func (p *process) signal(sig os.Signal) error {
	err := p.cmd.Process.Signal(sig)
	if err != nil && !errors.Is(err, os.ErrProcessDone) && !p.exited() {
		return fmt.Errorf("redistest: sending %v to redis-server (pid %d): %w", sig, p.cmd.Process.Pid, err)
	}
	return nil
}

// wait reports whether the process exits within d.
func (p *process) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// kill sends SIGKILL and waits for the reaping goroutine to finish.
func (p *process) kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	if !p.wait(stopTimeout) {
		return fmt.Errorf("redistest: redis-server (pid %d) still running %v after SIGKILL", p.cmd.Process.Pid, stopTimeout)
	}
	return nil
}

// awaitState waits until /proc shows the process stopped (or no longer
// stopped), so that Pause and Resume have taken effect when they return.
// Where /proc is unavailable it returns at once.
func (p *process) awaitState(stopped bool) error {
	path := "/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/stat"
	deadline := time.Now().Add(signalStateTimeout)
	for range int(signalStateTimeout / time.Millisecond) {
		stat, err := os.ReadFile(path)
		if err != nil || p.exited() {
			return nil
		}
		// The state follows the command name, which is in parentheses
		// and may itself contain ") ".
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 || i+2 >= len(stat) {
			return nil
		}
		if (stat[i+2] == 'T') == stopped {
			return nil
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("redistest: redis-server (pid %d) stopped=%v not reached within %v", p.cmd.Process.Pid, stopped, signalStateTimeout)
}

// binary returns the redis-server to run: REDIS_SERVER_BIN if set,
// otherwise redis-server looked up on PATH.
func binary() (string, error) {
	if bin := os.Getenv(binEnv); bin != "" {
		return exec.LookPath(bin)
	}
	return exec.LookPath("redis-server")
}

// inCI reports whether the CI environment variable is true.
func inCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
// Another process may take it before redis-server binds it; Launch then
// retries with a new port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, fmt.Errorf("redistest: unexpected listener address %v", l.Addr())
	}
	return addr.Port, nil
}

// tail returns at most the last n bytes of b.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
