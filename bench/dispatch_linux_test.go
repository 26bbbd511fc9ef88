package main

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestDispatchKeepsChildrenOfItsThread: the dispatcher's thread outlives
// it. It once exited with the dispatcher, and a redis-server node that
// internal/testkit/redistest had started from that thread (with Pdeathsig
// SIGKILL) was killed in the middle of a -sweep load run. Here a child
// is started from the thread the dispatcher then runs on.
func TestDispatchKeepsChildrenOfItsThread(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	cmd := exec.Command(sleep, "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// The main thread never exits (the runtime parks it instead), so the
	// child is started from another one, found by trying.
	var startErr error
	for started := false; !started; {
		done := make(chan bool)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if syscall.Gettid() == syscall.Getpid() {
				done <- false
				return
			}
			defer func() { done <- true }()
			if startErr = cmd.Start(); startErr != nil {
				return
			}
			defer dispatchThread()()
			dispatchSleep(time.Millisecond)
		}()
		started = <-done
	}
	if startErr != nil {
		t.Fatal(startErr)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("the child of the dispatcher's thread ended (%v) when the dispatcher did: the thread exited", err)
	case <-time.After(200 * time.Millisecond):
	}
	_ = cmd.Process.Kill() // the child this test started
	<-exited
}
