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

// modulePath is the module whose git checkout's commit -report reads.
const modulePath = "github.com/hybridlimit/hybridlimit"

// machine is what -report says about the computer it ran on.
type machine struct {
	cores, procs int    // runtime.NumCPU, GOMAXPROCS
	cpu          string // the model: "AMD EPYC 7B13"
	memory       string // "7.8 GiB"
	os           string // "linux/amd64, Ubuntu 24.04.1 LTS, kernel 6.8.0-45-generic"
	goVersion    string
}

// readMachine reads /proc and /etc/os-release; "unknown" for what they lack.
func readMachine() machine {
	m := machine{cores: runtime.NumCPU(), procs: runtime.GOMAXPROCS(0), goVersion: runtime.Version(),
		cpu: "CPU model " + unknown, memory: unknown + " amount", os: runtime.GOOS + "/" + runtime.GOARCH}
	for _, k := range []string{"model name", "Model", "Hardware"} { // x86, then ARM
		if v := field("/proc/cpuinfo", k, ":"); v != "" {
			m.cpu = v
			break
		}
	}
	if kb, err := strconv.ParseFloat(strings.TrimSuffix(field("/proc/meminfo", "MemTotal", ":"), " kB"), 64); err == nil {
		m.memory = fmt.Sprintf("%.1f GiB", kb/(1<<20))
	}
	if v := strings.Trim(field("/etc/os-release", "PRETTY_NAME", "="), `"`); v != "" {
		m.os += ", " + v
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.os += ", kernel " + strings.TrimSpace(string(b))
	}
	return m
}

// field returns the first "key<sep>value" of the file at path, trimmed, or "".
func field(path, key, sep string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if k, v, ok := strings.Cut(sc.Text(), sep); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// loadAverage is /proc/loadavg's over 1, 5 and 15 minutes: "0.52 0.40 0.31".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return unknown
}

// sourceCommit names the commit bench was built from: in a git checkout
// of this module, HEAD and whether the tree is clean; else the revision
// go build stamped (go run stamps none); else "unknown".
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
