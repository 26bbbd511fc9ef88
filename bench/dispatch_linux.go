package main

import (
	"runtime"
	"syscall"
	"time"
)

// prSetTimerSlack is prctl's PR_SET_TIMERSLACK.
const prSetTimerSlack = 29

// dispatchThread gives the calling goroutine a thread of its own for the
// rest of its life, with a timer slack of 1 ns instead of Linux's 50 µs
// (prctl PR_SET_TIMERSLACK): the thread's sleeps then end when asked. The
// goroutine never unlocks the thread, so the thread exits with it and the
// setting with the thread.
func dispatchThread() {
	runtime.LockOSThread()
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0) // best effort: a failure leaves the default slack
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
