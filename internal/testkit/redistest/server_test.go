package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ping fails the test unless the client's PING answers PONG within two
// seconds.
func ping(t *testing.T, rdb *redis.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if got, err := rdb.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("Ping() = %q, %v, want PONG, nil", got, err)
	}
}

// assertRefused fails the test if something accepts connections on addr.
func assertRefused(t *testing.T, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err == nil {
		conn.Close()
		t.Fatalf("Dial(%s) succeeded, want an error", addr)
	}
}

// assertProcessGone fails the test if pid still exists, polling briefly
// because the kernel may take a moment to reap it.
func assertProcessGone(t *testing.T, pid int) {
	t.Helper()
	for range 100 {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d still exists, want it gone", pid)
}

// isTimeout reports whether err is a deadline or network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

func TestStartPing(t *testing.T) {
	t.Parallel()
	s := Start(t)
	if got, want := s.Addr(), "127.0.0.1:"+strconv.Itoa(s.Port()); got != want {
		t.Errorf("Addr() = %q, want %q", got, want)
	}
	if s.Port() <= 0 {
		t.Errorf("Port() = %d, want > 0", s.Port())
	}
	if !s.Running() || s.Paused() || s.Pid() <= 0 {
		t.Errorf("Running(), Paused(), Pid() = %v, %v, %d, want true, false, > 0", s.Running(), s.Paused(), s.Pid())
	}
	ping(t, s.Client(t))
}

func TestRestartLosesDataAndScripts(t *testing.T) {
	t.Parallel()
	s := Start(t)
	rdb := s.Client(t)
	ctx := t.Context()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("Set() = %v", err)
	}
	sha, err := rdb.ScriptLoad(ctx, "return 1").Result()
	if err != nil {
		t.Fatalf("ScriptLoad() = %v", err)
	}
	if got, err := rdb.ScriptExists(ctx, sha).Result(); err != nil || len(got) != 1 || !got[0] {
		t.Fatalf("ScriptExists(%s) before Restart = %v, %v, want [true]", sha, got, err)
	}
	port, pid := s.Port(), s.Pid()

	if err := s.Restart(); err != nil {
		t.Fatalf("Restart() = %v", err)
	}
	if got := s.Port(); got != port {
		t.Errorf("Port() after Restart = %d, want %d", got, port)
	}
	if got := s.Pid(); got == pid || got <= 0 {
		t.Errorf("Pid() after Restart = %d, want a new pid (was %d)", got, pid)
	}
	assertProcessGone(t, pid)
	if got, err := rdb.Get(ctx, "k").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("Get(k) after Restart = %q, %v, want redis.Nil", got, err)
	}
	if got, err := rdb.ScriptExists(ctx, sha).Result(); err != nil || len(got) != 1 || got[0] {
		t.Errorf("ScriptExists(%s) after Restart = %v, %v, want [false]", sha, got, err)
	}
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := Start(t)
	rdb := s.Client(t)
	ping(t, rdb)

	if err := s.Pause(); err != nil {
		t.Fatalf("Pause() = %v", err)
	}
	if !s.Paused() || !s.Running() {
		t.Fatalf("Paused(), Running() = %v, %v, want true, true", s.Paused(), s.Running())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := rdb.Ping(ctx).Err()
	if elapsed := time.Since(start); err == nil || !isTimeout(err) || elapsed > 2*time.Second {
		t.Fatalf("Ping() while paused = %v after %v, want a timeout within 2s", err, elapsed)
	}

	if err := s.Resume(); err != nil {
		t.Fatalf("Resume() = %v", err)
	}
	if s.Paused() {
		t.Fatalf("Paused() after Resume = true, want false")
	}
	ping(t, rdb)
}

func TestKill(t *testing.T) {
	t.Parallel()
	s := Start(t)
	pid := s.Pid()
	if err := s.Kill(); err != nil {
		t.Fatalf("Kill() = %v", err)
	}
	if s.Running() || s.Pid() != 0 {
		t.Errorf("Running(), Pid() after Kill = %v, %d, want false, 0", s.Running(), s.Pid())
	}
	assertProcessGone(t, pid)
	assertRefused(t, s.Addr())
}

func TestStop(t *testing.T) {
	t.Parallel()
	s := Start(t)
	pid := s.Pid()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	if s.Running() {
		t.Errorf("Running() after Stop = true, want false")
	}
	assertProcessGone(t, pid)
	assertRefused(t, s.Addr())
}

func TestMethodsOnStoppedServerAreNoOps(t *testing.T) {
	t.Parallel()
	s := Start(t)
	if err := s.Kill(); err != nil {
		t.Fatalf("Kill() = %v", err)
	}
	tests := []struct {
		name string
		call func() error
	}{
		{"Stop", s.Stop},
		{"Kill", s.Kill},
		{"Pause", s.Pause},
		{"Resume", s.Resume},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); err != nil {
				t.Errorf("%s() on a killed server = %v, want nil", tt.name, err)
			}
			if s.Running() || s.Paused() || s.Pid() != 0 {
				t.Errorf("Running(), Paused(), Pid() = %v, %v, %d, want false, false, 0", s.Running(), s.Paused(), s.Pid())
			}
		})
	}
}

func TestRestartFrom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(*Server) error
	}{
		{"running", func(*Server) error { return nil }},
		{"paused", (*Server).Pause},
		{"killed", (*Server).Kill},
		{"stopped", (*Server).Stop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := Start(t)
			rdb := s.Client(t)
			if err := tt.setup(s); err != nil {
				t.Fatalf("setup = %v", err)
			}
			if err := s.Restart(); err != nil {
				t.Fatalf("Restart() = %v", err)
			}
			if !s.Running() || s.Paused() {
				t.Errorf("Running(), Paused() after Restart = %v, %v, want true, false", s.Running(), s.Paused())
			}
			ping(t, rdb)
		})
	}
}

func TestCleanupEndsProcess(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(*Server) error
	}{
		{"running", func(*Server) error { return nil }},
		{"paused", (*Server).Pause},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s *Server
			var pid int
			t.Run("inner", func(t *testing.T) {
				s = Start(t)
				pid = s.Pid()
				if err := tt.setup(s); err != nil {
					t.Fatalf("setup = %v", err)
				}
			})
			if s == nil {
				t.Skip("inner test did not start a server")
			}
			assertProcessGone(t, pid)
			if s.Running() {
				t.Errorf("Running() after cleanup = true, want false")
			}
			if err := s.Restart(); !errors.Is(err, errClosed) {
				t.Errorf("Restart() after cleanup = %v, want %v", err, errClosed)
			}
		})
	}
}

func TestStartN(t *testing.T) {
	t.Parallel()
	servers := StartN(t, 3)
	if len(servers) != 3 {
		t.Fatalf("StartN(3) returned %d servers, want 3", len(servers))
	}
	ports := map[int]bool{}
	for _, s := range servers {
		if ports[s.Port()] {
			t.Errorf("StartN(3) ports %v: %d repeated, want distinct", ports, s.Port())
		}
		ports[s.Port()] = true
		ping(t, s.Client(t))
	}
}

func TestWithArgs(t *testing.T) {
	t.Parallel()
	s := Start(t, WithArgs("--maxmemory", "1mb"), WithArgs("--maxmemory-policy", "allkeys-lru"))
	rdb := s.Client(t)
	got, err := rdb.ConfigGet(t.Context(), "maxmemory*").Result()
	if err != nil {
		t.Fatalf("ConfigGet() = %v", err)
	}
	if got["maxmemory"] != "1048576" || got["maxmemory-policy"] != "allkeys-lru" {
		t.Errorf("ConfigGet(maxmemory*) = %v, want maxmemory 1048576, policy allkeys-lru", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s := Start(t)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 20 {
				var err error
				if i%2 == 0 {
					err = s.Pause()
				} else {
					err = s.Resume()
				}
				if err != nil {
					t.Errorf("Pause/Resume = %v", err)
					return
				}
				_, _, _ = s.Running(), s.Paused(), s.Pid()
			}
		})
	}
	wg.Wait()
	if err := s.Resume(); err != nil {
		t.Fatalf("Resume() = %v", err)
	}
	if !s.Running() || s.Paused() {
		t.Fatalf("Running(), Paused() = %v, %v, want true, false", s.Running(), s.Paused())
	}
	ping(t, s.Client(t))
}

// recordingTB captures Fatalf and Skipf instead of ending the test.
type recordingTB struct {
	testing.TB
	fatal, skip string
}

func (r *recordingTB) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }
func (r *recordingTB) Skipf(format string, args ...any)  { r.skip = fmt.Sprintf(format, args...) }

func TestStartWithoutBinary(t *testing.T) {
	tests := []struct {
		ci        string
		wantFatal bool
	}{
		{"true", true},
		{"1", true},
		{"", false},
		{"false", false},
	}
	for _, tt := range tests {
		t.Run("CI="+tt.ci, func(t *testing.T) {
			t.Setenv(binEnv, "/nonexistent/redis-server")
			t.Setenv("CI", tt.ci)
			if Available() {
				t.Fatalf("Available() = true with %s unusable, want false", binEnv)
			}
			tb := &recordingTB{TB: t}
			if s := Start(tb); s != nil {
				t.Fatalf("Start() = %v, want nil", s)
			}
			msg := tb.skip
			if tt.wantFatal {
				msg = tb.fatal
			}
			if msg == "" || (tb.fatal != "") != tt.wantFatal || (tb.skip != "") == tt.wantFatal {
				t.Fatalf("Start() fatal = %q, skip = %q, want fatal %v", tb.fatal, tb.skip, tt.wantFatal)
			}
			if !strings.Contains(msg, "redis-server not found on PATH") {
				t.Errorf("Start() message = %q, want it to say redis-server was not found", msg)
			}
			if tt.wantFatal && !strings.Contains(msg, "apt-get install redis-server") {
				t.Errorf("Start() message = %q, want it to say how CI installs redis-server", msg)
			}
		})
	}
}

func TestAvailable(t *testing.T) {
	t.Setenv(binEnv, "")
	if !Available() {
		t.Skip("redis-server is not installed")
	}
	s := Start(t)
	ping(t, s.Client(t))
}

func TestLaunchClose(t *testing.T) {
	t.Setenv(binEnv, "")
	if !Available() {
		t.Skip("redis-server is not installed")
	}
	s, err := Launch()
	if err != nil {
		t.Fatalf("Launch() = %v", err)
	}
	pid, dir := s.Pid(), s.dir
	rdb := s.Client(t)
	ping(t, rdb)
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	assertProcessGone(t, pid)
	assertRefused(t, s.Addr())
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat(%s) after Close = %v, want it removed", dir, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
	if err := s.Restart(); !errors.Is(err, errClosed) {
		t.Errorf("Restart() after Close = %v, want %v", err, errClosed)
	}
}

func TestLaunchWithoutBinary(t *testing.T) {
	t.Setenv(binEnv, "/nonexistent/redis-server")
	s, err := Launch()
	if s != nil || !errors.Is(err, ErrNotFound) {
		t.Fatalf("Launch() = %v, %v, want nil, %v", s, err, ErrNotFound)
	}
}
