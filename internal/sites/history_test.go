package sites

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"
)

// TestHistoryWrittenWhenEstablished: a new site's one version is not
// written to storage until the site is established (requested again a
// minute after it was first seen); a change is written at once; and this
// process writes at most maxStoredSites new site histories.
func TestHistoryWrittenWhenEstablished(t *testing.T) {
	dir := t.TempDir()
	s := newTestLoader(t, Config{Storage: &certmagic.FileStorage{Path: dir}})
	count := func() int {
		entries, _ := os.ReadDir(filepath.Join(dir, "caddy-robots", "sites"))
		return len(entries)
	}
	waitFor := func(want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for count() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%d site histories in storage, want %d", count(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	key := func(n string) key { return key{server: ":443", host: n} }

	// One version, just seen: held back.
	a, _ := s.t.getOrAdd(key("a.example"))
	if err := s.publish(a, []byte("User-agent: *\nDisallow: /a/\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := count(); n != 0 {
		t.Fatalf("a site seen once was written: %d histories", n)
	}
	if !a.dirty.Load() {
		t.Fatal("the held-back history is not marked dirty")
	}
	// Not established yet: persistDue writes nothing.
	s.persistDue(a)
	time.Sleep(100 * time.Millisecond)
	if n := count(); n != 0 {
		t.Fatalf("written before the site was established: %d", n)
	}
	// Requested a minute later: written by the refresh loop's pass.
	a.used.Store(a.born + establishAfter)
	s.persistDue(a)
	waitFor(1)
	if a.dirty.Load() {
		t.Error("still dirty after the write")
	}

	// A change is written at once, however new the site.
	b, _ := s.t.getOrAdd(key("b.example"))
	if err := s.publish(b, []byte("User-agent: *\nDisallow: /b/\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.publish(b, []byte("User-agent: *\nDisallow: /c/\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(2)

	// The bound: past maxStoredSites, new sites are not written.
	saved := storedSites.Load()
	defer storedSites.Store(saved)
	storedSites.Store(maxStoredSites)
	c, _ := s.t.getOrAdd(key("c.example"))
	c.used.Store(c.born + establishAfter)
	if err := s.publish(c, []byte("User-agent: *\nDisallow: /d/\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := count(); n != 2 {
		t.Errorf("past the bound, %d histories (want 2)", n)
	}
	// A site already stored keeps being written past the bound.
	if err := s.publish(a, []byte("User-agent: *\nDisallow: /e/\n")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		data, err := os.ReadFile(filepath.Join(dir, s.t.historyKey(a.key)))
		var h storedHistory
		if err == nil && json.Unmarshal(data, &h) == nil && len(h.Versions) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a stored site's change was not written past the bound: %s %v", data, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHistoryBriefVersions: a version the loader saw replace another is
// current from then (From), one that was already current when first loaded
// has no known start (From zero: never brief); both survive a restart
// through storage. A history written before the start was recorded reads
// every version but the oldest as seen replacing another.
func TestHistoryBriefVersions(t *testing.T) {
	storage := newMemStorage()
	f := &fakeSite{answer: always(200, "User-agent: *\nDisallow: /a/\n")}
	l := newSiteLoader(t, f, 8080, Config{Storage: storage})
	first := snapshot(l, "a.example").Judged
	if len(first) != 1 || !first[0].From.IsZero() {
		t.Fatalf("first version: %v, want no known start", describe(first))
	}
	f.set(always(200, "User-agent: *\nDisallow: /b/\n"))
	Reload(context.Background(), []*Loader{l})
	vs := snapshot(l, "a.example").Judged
	if len(vs) != 2 || vs[0].From.IsZero() || !vs[0].From.Equal(vs[1].Until) || !vs[1].From.IsZero() {
		t.Fatalf("after a change: %v", describe(vs))
	}
	if st := l.Status()[0]; st.Versions[0].StartUnknown || !st.Versions[1].StartUnknown || st.Versions[1].From.IsZero() {
		t.Errorf("status: %+v", st.Versions)
	}
	hk := l.t.historyKey(key{server: ":8080", host: "a.example"})
	waitStored := func() {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			data, err := storage.Load(context.Background(), hk)
			var h storedHistory
			if err == nil && json.Unmarshal(data, &h) == nil && len(h.Versions) == 2 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("history not written: %s %v", data, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitStored()

	// A restart: a new table and loader on the same storage. The site
	// now answers a third version: the loader did not see it replace the
	// second (the process was down), so its start is unknown too.
	f.set(always(200, "User-agent: *\nDisallow: /c/\n"))
	again := newTestLoader(t, Config{Storage: storage})
	again.SetServer(Server{Handler: f, Key: ":8080", Port: 8080})
	got := snapshot(again, "a.example").Judged
	if len(got) != 3 || !got[0].From.IsZero() || !got[1].From.Equal(vs[0].From) || got[1].Until.IsZero() ||
		!got[2].From.IsZero() || !got[2].Until.Equal(vs[1].Until) {
		t.Errorf("after a restart: %v", describe(got))
	}

	// A history of the first format.
	old := storedHistory{Source: "site", Server: ":8080", Host: "old.example", Versions: []storedVersion{
		{ID: got[1].ID, From: time.Now().Add(-time.Hour)},
		{ID: vs[1].ID, From: time.Now().Add(-2 * time.Hour), Until: time.Now().Add(-time.Hour)},
	}}
	data, _ := json.Marshal(old)
	if err := storage.Store(context.Background(), again.t.historyKey(key{server: ":8080", host: "old.example"}), data); err != nil {
		t.Fatal(err)
	}
	st, _ := again.t.getOrAdd(key{server: ":8080", host: "old.example"})
	again.restore(st)
	rv := st.snap.Load().Judged
	if len(rv) != 2 || rv[0].From.IsZero() || !rv[1].From.IsZero() {
		t.Errorf("first-format history: %v, want the newer seen, the oldest not", describe(rv))
	}
}
