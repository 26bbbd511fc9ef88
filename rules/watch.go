package rules

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// reloadDebounce is how long Watch waits after the last change in the
// directory before reading the file: an editor's save is several events
// (truncate, write, rename), and reading between them would see a partial
// file.
const reloadDebounce = 100 * time.Millisecond

// Watch puts the rules file at path in force (parsed by parse), then again
// each time it changes, until ctx ends; it returns nil then, having stopped
// every goroutine it started. It returns an error only when the directory
// cannot be watched.
//
// Watch watches the file's directory, not the file, so that a save by
// rename (most editors), a removal followed by a new file, and the symlink
// swap of a Kubernetes ConfigMap volume are all seen. On each change it
// reads the file; content identical to the last read is ignored. A file
// that does not parse or validate is logged as an error and counted
// (Stats.ReloadErrors), and the rules in force stay; so do they while the
// file is missing (logged as a warning). A valid file is put in force with
// Swap: atomically, and rules that keep their name keep their budgets and
// counters.
func (e *Engine[M]) Watch(ctx context.Context, path string, parse func([]byte) (RuleSet, error)) error {
	pkg := e.d.Pkg
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("%s: watching %s: %w", pkg, path, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("%s: watching %s: %w", pkg, path, err)
	}
	defer w.Close() // waits for the watcher's goroutine
	if err := w.Add(filepath.Dir(abs)); err != nil {
		return fmt.Errorf("%s: watching %s: %w", pkg, filepath.Dir(abs), err)
	}
	var last []byte                 // content last read; nil when missing
	missing, failed := false, false // the last read found no file; a problem was logged
	readErr := ""                   // the last read's error
	reload := func() {
		data, err := readFile(e.d, abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			readErr = ""
			if !missing {
				e.log.Warn(pkg+": rules file missing; the rules in force stay", "path", abs)
			}
			missing, failed, last = true, true, nil
			return
		case err != nil:
			// Unreadable, or too large: a failed reload, counted once.
			if msg := err.Error(); msg != readErr {
				readErr = msg
				e.reloadErrors.Add(1)
				e.log.Error(pkg+": rules file not loaded; the rules in force stay", "path", abs, "err", err)
			}
			missing, failed, last = false, true, nil
			return
		}
		missing, readErr = false, ""
		if last != nil && bytes.Equal(data, last) {
			return
		}
		last = data
		rs, err := parse(data)
		if err == nil {
			var changed bool
			if changed, err = e.Swap(rs); err == nil {
				switch {
				case changed:
					e.log.Info(pkg+": rules reloaded", "path", abs, "rules", len(rs.Rules), "default", rs.Default != nil)
				case failed:
					e.log.Info(pkg+": rules file valid again; it holds the rules in force", "path", abs)
				}
				failed = false
				return
			}
		} else {
			e.reloadErrors.Add(1)
		}
		failed = true
		e.log.Error(pkg+": rules file rejected; the rules in force stay", "path", abs, "err", err)
	}
	reload()

	timer := time.NewTimer(reloadDebounce)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-w.Events:
			if !ok {
				return fmt.Errorf("%s: watching %s: watcher closed", pkg, abs)
			}
			// Any change in the directory may be ours (a symlink swapped
			// under it, a rename onto it); the read is cheap and identical
			// content is ignored.
			timer.Reset(reloadDebounce)
		case err, ok := <-w.Errors:
			if !ok {
				return fmt.Errorf("%s: watching %s: watcher closed", pkg, abs)
			}
			e.log.Warn(pkg+": watching rules file", "path", abs, "err", err)
			timer.Reset(reloadDebounce) // events may have been lost
		case <-timer.C:
			reload()
		}
	}
}
