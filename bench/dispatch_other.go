//go:build !linux

package main

import "time"

// dispatchThread does nothing: only Linux has dispatch_linux.go's precise sleep.
func dispatchThread() (release func()) { return func() {} }

// dispatchSleep is time.Sleep, which can wake a millisecond late ("gen lag p99" shows it).
func dispatchSleep(d time.Duration) { time.Sleep(d) }
