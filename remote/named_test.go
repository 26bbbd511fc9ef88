package remote

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/limit"
)

// TestNamedKeys: a named limit's state is keyed by its name and algorithm,
// whatever its rate, and carries the limit it was written for; the two
// limits of one name but different algorithms are two states.
func TestNamedKeys(t *testing.T) {
	s, _, rdb := newRealProduction(t)
	ctx := context.Background()
	a := limit.Limit{Rate: 10, Period: time.Minute, Name: "api"}
	b := a
	b.Rate = 20
	if ka, kb := s.Key("k", a), s.Key("k", b); ka != kb || ka != "rl:{k}:@tb:api" {
		t.Fatalf("keys %q and %q, want both rl:{k}:@tb:api", ka, kb)
	}
	w := a
	w.Algorithm = limit.SlidingWindowLog
	if s.Key("k", w) == s.Key("k", a) {
		t.Fatalf("another algorithm shares the key %q", s.Key("k", a))
	}
	if _, _, err := s.decide(ctx, "k", 3, a); err != nil {
		t.Fatal(err)
	}
	v, err := rdb.Get(ctx, s.Key("k", a)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := "|1:60000000:10:10"; len(v) < len(want) || v[len(v)-len(want):] != want {
		t.Errorf("state %q does not end with the tag %q", v, want)
	}
	if _, _, err := s.decide(ctx, "k", 3, w); err != nil {
		t.Fatal(err)
	}
	// The log's tag is a member below every event; it is not counted.
	if n, err := rdb.ZCard(ctx, s.Key("k", w)).Result(); err != nil || n != 4 {
		t.Errorf("log holds %d members (%v), want 3 events and the tag", n, err)
	}
	d, _, err := s.decide(ctx, "k", 1, w)
	if err != nil || !d.Allowed || d.Remaining != 6 {
		t.Errorf("fourth unit of the log: %+v, %v; want allowed, 6 remaining", d, err)
	}
}

// TestNamedGiveBackAfterChange: units of a lease taken under one limit of
// a name do not go back to the state once another limit of that name has
// converted it (nothing says which units were the lease's), and the give
// back does not convert it back.
func TestNamedGiveBackAfterChange(t *testing.T) {
	for _, alg := range []limit.Algorithm{limit.TokenBucket, limit.LeakyBucket, limit.FixedWindow, limit.SlidingWindowLog, limit.SlidingWindowCounter} {
		t.Run(alg.String(), func(t *testing.T) {
			s, _, _ := newRealProduction(t)
			ctx := context.Background()
			before := limit.Limit{Algorithm: alg, Rate: 100, Period: time.Hour, Name: "api"}
			after := before
			after.Rate = 200
			l, err := s.lease(ctx, "k", 50, before)
			if err != nil || l.Granted != 50 {
				t.Fatalf("lease: %+v, %v", l, err)
			}
			d, _, err := s.decide(ctx, "k", 1, after)
			if err != nil || d.Remaining != 149 {
				t.Fatalf("after the change: %+v, %v; want 149 remaining (50 in use of 200, and this one)", d, err)
			}
			if err := s.giveBack(ctx, "k", l.At, 50, before); err != nil {
				t.Fatal(err)
			}
			d, _, err = s.decide(ctx, "k", 1, after)
			if err != nil || d.Remaining != 148 {
				t.Errorf("after a give-back under the old limit: %+v, %v; want 148 remaining (nothing given back)", d, err)
			}
			// Under the current limit the give-back counts.
			if err := s.giveBack(ctx, "k", l.At, 10, after); err != nil {
				t.Fatal(err)
			}
			d, _, err = s.decide(ctx, "k", 1, after)
			if err != nil || d.Remaining != 157 {
				t.Errorf("after a give-back of 10 under the current limit: %+v, %v; want 157 remaining", d, err)
			}
		})
	}
}

// TestProbeTouchesNoUserKey: Probe's reserved keys cannot be any user
// key's, not even "probe" under the very limits the probe uses: that
// client's keys are all still there after it (the probe deletes its own),
// and nothing of the probe is left.
func TestProbeTouchesNoUserKey(t *testing.T) {
	s, _, rdb := newRealProduction(t)
	ctx := context.Background()
	// The window limits: their keys live a second (a bucket at the
	// probe's rate is full again, and its key gone, within microseconds).
	// A FixedWindow key expires at the end of its second, so start just
	// after one begins (Redis's clock is this machine's): the test then
	// has most of a second, which it needs a few milliseconds of (its
	// window once ended between the two KEYS, under CI load).
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 5*time.Millisecond)))
	for _, l := range probeLimits[2:5] {
		if _, _, err := s.decide(ctx, "probe", 3, l); err != nil {
			t.Fatal(err)
		}
	}
	before, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(before)
	slices.Sort(after)
	if !slices.Equal(before, after) {
		t.Errorf("keys %v before the probe, %v after", before, after)
	}
}
