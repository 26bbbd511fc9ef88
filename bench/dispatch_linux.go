package main

import (
	"runtime"
	"syscall"
	"time"
)

// prSetTimerSlack is prctl's PR_SET_TIMERSLACK.
const prSetTimerSlack = 29

// dispatchThread gives the calling goroutine its thread until release is
// called, with a timer slack of 1 ns instead of Linux's 50 µs (prctl
// PR_SET_TIMERSLACK): the thread's sleeps then end when asked. release
// sets the slack back to the thread's default and unlocks the thread,
// which must outlive the goroutine: a locked thread exits with its
// goroutine, and a child process started from that thread with a parent
// death signal dies with it, as the redis-server nodes that
// internal/testkit/redistest starts (Pdeathsig SIGKILL) did.
func dispatchThread() (release func()) {
	runtime.LockOSThread()
	// Best effort: a failure leaves the default slack.
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0)
	return func() {
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 0, 0) // 0: the thread's default
		runtime.UnlockOSThread()
	}
}

// dispatchSleep sleeps d with nanosleep. time.Sleep would not do: when
// every goroutine is parked, the runtime waits in epoll with a timeout of
// whole milliseconds, so a sleep of 50 µs lasts about 1 ms, which an
// arrival schedule at 5,000/s (a gap of 200 µs on average) cannot afford.
// On an idle 2-core machine nanosleep wakes 15-60 µs late.
func dispatchSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR { // ts is now what was left
	}
}
