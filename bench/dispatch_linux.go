package main

import (
	"runtime"
	"syscall"
	"time"
)

// prSetTimerSlack is prctl's PR_SET_TIMERSLACK.
const prSetTimerSlack = 29

// dispatchThread locks the calling goroutine to its thread, with a timer
// slack of 1 ns instead of Linux's 50 µs, until release. release restores
// the slack and unlocks the thread, so that it outlives the goroutine: a
// locked thread exits with its goroutine, and the redis-server nodes it
// started (Pdeathsig SIGKILL) would die with it.
func dispatchThread() (release func()) {
	runtime.LockOSThread()
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0) // best effort
	return func() {
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 0, 0) // 0: the default
		runtime.UnlockOSThread()
	}
}

// dispatchSleep sleeps d with nanosleep: with every goroutine parked,
// time.Sleep waits in epoll in whole milliseconds, too coarse for gaps of
// 200 µs.
func dispatchSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR { // ts is now what was left
	}
}
