package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// unknown is what -report says of a fact the system does not give.
const unknown = "unknown"

// modulePath is this module's path: -report reads the commit of a git
// checkout only when it is this module's.
const modulePath = "github.com/hybridlimit/hybridlimit"

// machine is what -report says about the computer it ran on, read from
// Linux's /proc and /etc/os-release where they are ("unknown" otherwise).
type machine struct {
	cores, procs int    // runtime.NumCPU, GOMAXPROCS
	cpu          string // the model: "AMD EPYC 7B13"
	memory       string // "7.8 GiB"
	os           string // "linux/amd64, Ubuntu 24.04.1 LTS, kernel 6.8.0-45-generic"
	goVersion    string
}

// readMachine reads the machine bench runs on.
func readMachine() machine {
	return machine{cores: runtime.NumCPU(), procs: runtime.GOMAXPROCS(0), cpu: cpuModel(), memory: memTotal(),
		os: osName(), goVersion: runtime.Version()}
}

// field returns the value of the first line of the file at path that
// reads "key<sep>value" (spaces around both trimmed), or "".
func field(path, key, sep string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// cpuModel is the processor's model from /proc/cpuinfo: "model name" on
// x86, "Model" or "Hardware" on ARM.
func cpuModel() string {
	for _, k := range []string{"model name", "Model", "Hardware"} {
		if v := field("/proc/cpuinfo", k, ":"); v != "" {
			return v
		}
	}
	return "CPU model " + unknown
}

// memTotal is MemTotal from /proc/meminfo, in GiB.
func memTotal() string {
	v := strings.TrimSuffix(field("/proc/meminfo", "MemTotal", ":"), " kB")
	kb, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return unknown + " amount"
	}
	return fmt.Sprintf("%.1f GiB", kb/(1<<20))
}

// osName is GOOS/GOARCH, the distribution's PRETTY_NAME and the kernel's
// release, those that can be read.
func osName() string {
	parts := []string{runtime.GOOS + "/" + runtime.GOARCH}
	if v := strings.Trim(field("/etc/os-release", "PRETTY_NAME", "="), `"`); v != "" {
		parts = append(parts, v)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		parts = append(parts, "kernel "+strings.TrimSpace(string(b)))
	}
	return strings.Join(parts, ", ")
}

// loadAverage is the load average over 1, 5 and 15 minutes from
// /proc/loadavg, "0.52 0.40 0.31".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return unknown
}

// sourceCommit names the commit bench was built from: in a git checkout
// of this module (what `go run ./bench` builds), git rev-parse HEAD, and
// whether git status lists changes; else the revision the go command
// stamped into the binary (go build does, go run does not); else
// "unknown".
func sourceCommit(ctx context.Context) string {
	git := func(args ...string) (string, bool) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "git", args...).Output()
		return strings.TrimSpace(string(out)), err == nil
	}
	if top, ok := git("rev-parse", "--show-toplevel"); ok && field(filepath.Join(top, "go.mod"), "module", " ") == modulePath {
		head, ok := git("rev-parse", "HEAD")
		status, ok2 := git("status", "--porcelain")
		switch {
		case ok && ok2 && status == "":
			return head + " (a clean tree)"
		case ok && ok2:
			return head + ", with uncommitted changes"
		case ok:
			return head
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		vcs := map[string]string{}
		for _, st := range bi.Settings {
			vcs[st.Key] = st.Value
		}
		switch rev := vcs["vcs.revision"]; {
		case rev != "" && vcs["vcs.modified"] == "true":
			return rev + ", with uncommitted changes (stamped by go build)"
		case rev != "":
			return rev + " (stamped by go build)"
		}
	}
	return unknown
}
