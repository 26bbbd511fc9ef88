//go:build !linux

package main

import "time"

// dispatchThread does nothing here: only Linux has the precise sleep of
// dispatch_linux.go.
func dispatchThread() (release func()) { return func() {} }

// dispatchSleep is time.Sleep, which can wake about a millisecond late
// when the process is idle; the generator's lag (the "gen lag p99"
// column) shows it.
func dispatchSleep(d time.Duration) { time.Sleep(d) }
