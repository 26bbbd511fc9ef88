// Package redistest starts real redis-server processes for tests and for
// bench's embedded default.
//
// Unit tests in this module run against miniredis; the conformance suite
// also runs against real Redis, which is the oracle where the two differ.
// This package gives those tests a private server per test:
//
//	func TestAgainstRedis(t *testing.T) {
//		srv := redistest.Start(t)
//		rdb := srv.Client(t)
//		if err := rdb.Ping(t.Context()).Err(); err != nil {
//			t.Fatal(err)
//		}
//	}
//
// Start finds the binary with exec.LookPath("redis-server"), or uses the
// path in the REDIS_SERVER_BIN environment variable. It picks a free port
// on 127.0.0.1, runs the server in the foreground with persistence off and
// its working directory under t.TempDir, waits until the server answers,
// and registers a cleanup that kills the process and waits for it to exit.
// No goroutine or process outlives the test, so callers may use
// go.uber.org/goleak.
//
// When redis-server is not installed, Start skips the test, unless the
// environment variable CI is true, in which case it fails the test: a CI
// run that silently skips the real-Redis suite has proved nothing.
//
// Programs that are not tests, such as go run ./bench, call Launch
// instead: it starts the same kind of process, in a directory of its own
// under os.TempDir, and returns it or an error (wrapping ErrNotFound when
// there is no binary); the caller must call Close, which kills the process,
// waits for it and removes the directory. Start is Launch plus a test
// cleanup that calls Close.
//
//	srv, err := redistest.Launch()
//	if err != nil {
//		return err
//	}
//	defer srv.Close()
//
// A Server can also be used to inject faults: Stop and Kill end the
// process, Pause and Resume freeze it with SIGSTOP and SIGCONT (clients
// then time out rather than being refused), and Restart replaces it with a
// fresh, empty process on the same port, which loses all keys and the Lua
// script cache, as a failover to a new node would.
//
// The package needs a Unix-like system (it sends SIGSTOP and SIGCONT). On
// Linux the server also receives SIGKILL if the test binary dies without
// running its cleanups, for example when go test -timeout fires.
package redistest
