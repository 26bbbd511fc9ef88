//go:build !linux

package main

import "time"

// dispatchThread does nothing here: only Linux has the precise sleep of
// dispatch_linux.go.
func dispatchThread() {}

// dispatchSleep is time.Sleep, which can wake about a millisecond late
// when the process is idle; the generator's lag (the "gen lag p99"
// column) shows it, and a step it spoils is reported as limited by the
// generator.
func dispatchSleep(d time.Duration) { time.Sleep(d) }
