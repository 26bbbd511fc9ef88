package redistest

import "time"

// WatchStalls measures how long the machine stalls until stop is called:
// the longest a goroutine that only sleeps 1 ms woke late. On a loaded
// 2-core machine under -race (GC, other tests' servers) that reaches tens
// of milliseconds, and a test that judges time budgets reads it to tell
// the machine's delays from the code's. stop returns it, and ends the
// goroutine before it returns.
func WatchStalls() (stop func() time.Duration) {
	quit := make(chan struct{})
	worst := make(chan time.Duration)
	go func() {
		var w time.Duration
		for {
			select {
			case <-quit:
				worst <- w
				return
			default:
			}
			t0 := time.Now()
			time.Sleep(time.Millisecond)
			w = max(w, time.Since(t0)-time.Millisecond)
		}
	}()
	return func() time.Duration {
		close(quit)
		return <-worst
	}
}
