package redistest

import "syscall"

// setParentDeathSignal makes the kernel kill redis-server when the test
// binary dies without running its cleanups, for example when go test
// -timeout panics. The signal fires when the OS thread that started the
// process exits, which the Go runtime does only for a goroutine that exits
// while locked to its thread.
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
