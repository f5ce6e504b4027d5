package sites

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// outageLog records what a loader tells of failed and recovered loads.
type outageLog struct {
	mu        sync.Mutex
	failed    []Outage
	recovered []Outage
}

func (o *outageLog) config(now func() time.Time) Config {
	return Config{
		Now: now,
		Failed: func(_ string, _ error, run Outage) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.failed = append(o.failed, run)
		},
		Recovered: func(_ string, run Outage) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.recovered = append(o.recovered, run)
		},
	}
}

func (o *outageLog) counts() (failed, recovered int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.failed), len(o.recovered)
}

// TestOutageToldOnce: the failures of one outage are told once, then at
// most every FailedRepeat; the first success after them is told as a
// recovery with the outage's start, end and failed loads; a new outage is
// told again.
func TestOutageToldOnce(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	f := &fakeSite{answer: always(200, "User-agent: *\nDisallow: /private/\n")}
	var log outageLog
	l := newSiteLoader(t, f, 8080, log.config(clock))
	if snapshot(l, "a.example").Current() == nil {
		t.Fatal("no rules")
	}
	reload := func() { Reload(context.Background(), []*Loader{l}) }

	f.set(always(http.StatusServiceUnavailable, "down"))
	start := clock()
	for range 5 {
		reload()
		advance(time.Minute)
	}
	if failed, recovered := log.counts(); failed != 1 || recovered != 0 {
		t.Fatalf("5 failed loads: told %d failures and %d recoveries, want 1 and 0", failed, recovered)
	}
	if got := log.failed[0]; !got.Since.Equal(start) || got.Failures != 1 {
		t.Errorf("first failure told as %+v", got)
	}
	advance(FailedRepeat)
	reload() // an hour on, still down: told again, with the count so far
	reload()
	if failed, _ := log.counts(); failed != 2 || log.failed[1].Failures != 6 || !log.failed[1].Since.Equal(start) {
		t.Errorf("an hour into the outage: %+v, want a second report of 6 failures since %v", log.failed, start)
	}

	f.set(always(200, "User-agent: *\nDisallow: /private/\n"))
	reload()
	reload() // a second success is no second recovery
	if _, recovered := log.counts(); recovered != 1 {
		t.Fatalf("told %d recoveries, want 1", recovered)
	}
	if got := log.recovered[0]; !got.Since.Equal(start) || got.Failures != 7 || got.Until.Sub(got.Since) != 5*time.Minute+FailedRepeat {
		t.Errorf("recovery told as %+v, want 7 failures over %v", got, 5*time.Minute+FailedRepeat)
	}

	f.set(always(http.StatusBadGateway, "down again"))
	reload()
	if failed, _ := log.counts(); failed != 3 || log.failed[2].Failures != 1 {
		t.Errorf("a new outage: %+v, want a new report of 1 failure", log.failed)
	}
	// A 4xx is an answer: no rules (once confirmed), not a failure.
	f.set(always(http.StatusNotFound, "gone"))
	reload()
	if _, recovered := log.counts(); recovered != 2 {
		t.Errorf("a 404 after failures: told %d recoveries, want 2", recovered)
	}
}
