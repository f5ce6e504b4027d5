package sites

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
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

// TestUnchangedRulesSameVersion: a body that changes on every fetch (a
// timestamp comment, the Host in a Sitemap line) but says the same rules
// is not a new version: the current one keeps its id, body and start, no
// parsed copy is kept for it, and storage gets nothing new.
func TestUnchangedRulesSameVersion(t *testing.T) {
	storage := newMemStorage()
	n := 0
	f := &fakeSite{answer: func(host string) (int, string) {
		n++
		return 200, fmt.Sprintf("# generated at fetch %d\nUser-agent: *\nDisallow: /private/\nSitemap: https://%s/sitemap.xml\n", n, host)
	}}
	l := newSiteLoader(t, f, 8080, Config{Storage: storage})
	st, _ := l.t.getOrAdd(key{server: ":8080", host: "a.example"})
	setClock(t, st.born+establishAfter) // established: its history is written
	first := snapshot(l, "a.example").Current()
	for range 10 {
		Reload(context.Background(), []*Loader{l})
	}
	snap := snapshot(l, "a.example")
	if len(snap.Judged) != 1 || snap.Current() != first {
		t.Fatalf("%d versions (%v), want the first one only", len(snap.Judged), describe(snap.Judged))
	}
	if len(l.t.content) != 1 {
		t.Errorf("%d parsed bodies kept, want 1", len(l.t.content))
	}
	time.Sleep(100 * time.Millisecond) // histories are written in the background
	if bodies := storage.keys("caddy-robots/robots"); len(bodies) != 1 || !strings.HasSuffix(bodies[0], first.ID+".txt") {
		t.Errorf("bodies in storage: %v, want the first version's only", bodies)
	}
	// A real change is a new version.
	f.set(always(200, "User-agent: *\nDisallow: /other/\n"))
	Reload(context.Background(), []*Loader{l})
	if snap := snapshot(l, "a.example"); len(snap.Judged) != 2 {
		t.Errorf("a change of rules: %d versions, want 2", len(snap.Judged))
	}
}

// TestSweepKeepsHeldBodies: storage keeps the bodies of the versions some
// history still names or some table still holds, and deletes the others
// (those pushed out of every history, those of an older run) once they
// are old enough.
func TestSweepKeepsHeldBodies(t *testing.T) {
	setSweep(t, 0, 0)
	storage := newMemStorage()
	ctx := context.Background()
	// A body of an older run that nothing names, and one that another
	// source's history names.
	_ = storage.Store(ctx, bodyPrefix+"0123456789ab.txt", []byte("User-agent: *\nDisallow: /old/\n"))
	other := []byte("User-agent: *\nDisallow: /other/\n")
	_ = storage.Store(ctx, bodyPrefix+ContentID(other)+".txt", other)
	data, _ := json.Marshal(storedHistory{Source: "file:/x", Format: historyFormat, Versions: []storedVersion{{ID: ContentID(other)}}})
	_ = storage.Store(ctx, historyPrefix+"other.json", data)

	body := "User-agent: *\nDisallow: /v0/\n"
	f := &fakeSite{answer: func(string) (int, string) { return 200, body }}
	l := newSiteLoader(t, f, 8080, Config{Storage: storage})
	snapshot(l, "a.example")
	for i := 1; i <= maxVersions+3; i++ {
		body = fmt.Sprintf("User-agent: *\nDisallow: /v%d/\n", i)
		Reload(ctx, []*Loader{l})
	}
	held := map[string]bool{ContentID(other): true}
	for _, v := range snapshot(l, "a.example").Judged {
		held[v.ID] = true
	}
	if len(held) != maxVersions+1 {
		t.Fatalf("%d versions held", len(held)-1)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		bodies := storage.keys("caddy-robots/robots")
		kept := 0
		for _, k := range bodies {
			if held[strings.TrimSuffix(path.Base(k), ".txt")] {
				kept++
			}
		}
		if kept == len(held) && len(bodies) == len(held) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bodies in storage: %d (%d of the %d held): %v", len(bodies), kept, len(held), bodies)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A body written just now is never swept: its history may be on the
	// way.
	fresh := []byte("User-agent: *\nDisallow: /fresh/\n")
	_ = storage.Store(ctx, bodyPrefix+ContentID(fresh)+".txt", fresh)
	if sweep(storage, zap.NewNop(), time.Hour); !storage.Exists(ctx, bodyPrefix+ContentID(fresh)+".txt") {
		t.Error("a fresh body was swept")
	}
}

// setSweep makes the storage sweep run every every, deleting bodies older
// than minAge, for the test.
func setSweep(t *testing.T, every, minAge time.Duration) {
	t.Helper()
	janitor.Lock()
	savedEvery, savedAge, savedLast := janitor.every, janitor.minAge, janitor.last
	janitor.every, janitor.minAge, janitor.last = every, minAge, time.Time{}
	janitor.Unlock()
	t.Cleanup(func() {
		janitor.Lock()
		janitor.every, janitor.minAge, janitor.last = savedEvery, savedAge, savedLast
		janitor.Unlock()
	})
}

// TestWithdraw: a replaced version is taken out of every site that holds
// it and out of stored histories, with a log line naming it, the site and
// who asked; the current version, an unknown id and a malformed one are
// refused, and nothing changes.
func TestWithdraw(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	storage := newMemStorage()
	body := "User-agent: *\nDisallow: /a/\n"
	f := &fakeSite{answer: func(string) (int, string) { return 200, body }}
	l := newSiteLoader(t, f, 8080, Config{Storage: storage, Logger: zap.New(core)})
	ctx := context.Background()
	snapshot(l, "a.example")
	snapshot(l, "b.example")
	a := ContentID([]byte(body))
	body = "User-agent: *\nDisallow: /b/\n"
	Reload(ctx, []*Loader{l})
	b := ContentID([]byte(body))
	// A site that is not loaded, whose stored history holds a too.
	offline, _ := json.Marshal(storedHistory{Source: "site", Server: ":8080", Host: "c.example", Format: historyFormat,
		Versions: []storedVersion{{ID: b, From: time.Now()}, {ID: a, From: time.Now().Add(-time.Hour), Until: time.Now()}}})
	offlineKey := l.t.historyKey(key{server: ":8080", host: "c.example"})
	_ = storage.Store(ctx, offlineKey, offline)
	logs.TakeAll()

	var ce *CurrentError
	if _, err := Withdraw(ctx, []*Loader{l}, b, "test"); !errors.As(err, &ce) || ce.Stored || ce.ID != b {
		t.Errorf("withdraw the current version: %v", err)
	}
	for id, want := range map[string]error{"0123456789ab": ErrUnknownVersion, "../x": ErrBadVersion, "ABCDEF012345": ErrBadVersion} {
		if _, err := Withdraw(ctx, []*Loader{l}, id, "test"); !errors.Is(err, want) {
			t.Errorf("withdraw %q: %v, want %v", id, err, want)
		}
	}
	if n := len(snapshot(l, "a.example").Judged); n != 2 {
		t.Fatalf("a refused withdrawal changed the versions: %d", n)
	}

	done, err := Withdraw(ctx, []*Loader{l}, a, "192.0.2.1:5000 (curl/8)")
	if err != nil || len(done) != 3 {
		t.Fatalf("withdraw %s: %+v, %v; want 3 sites", a, done, err)
	}
	for _, host := range []string{"a.example", "b.example"} {
		if vs := snapshot(l, host).Judged; len(vs) != 1 || vs[0].ID != b {
			t.Errorf("%s after the withdrawal: %v", host, describe(vs))
		}
	}
	data, _ := storage.Load(ctx, offlineKey)
	var h storedHistory
	if err := json.Unmarshal(data, &h); err != nil || len(h.Versions) != 1 || h.Versions[0].ID != b {
		t.Errorf("the offline site's stored history: %s", data)
	}
	entries := logs.FilterMessageSnippet("withdrawn").All()
	if len(entries) != 3 {
		t.Fatalf("%d log lines, want one per site", len(entries))
	}
	for _, e := range entries {
		if f := e.ContextMap(); f["version"] != a || f["by"] != "192.0.2.1:5000 (curl/8)" || f["host"] == "" || e.Level != zapcore.InfoLevel {
			t.Errorf("log line %v", f)
		}
	}
	if _, err := Withdraw(ctx, []*Loader{l}, a, "test"); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("withdrawing again: %v, want ErrUnknownVersion", err)
	}

	// A version current in a stored history of a site not loaded is that
	// site's current version as far as anyone knows.
	cur, _ := json.Marshal(storedHistory{Source: "site", Server: ":8080", Host: "d.example", Format: historyFormat,
		Versions: []storedVersion{{ID: "aaaaaaaaaaaa", From: time.Now()}}})
	_ = storage.Store(ctx, l.t.historyKey(key{server: ":8080", host: "d.example"}), cur)
	if _, err := Withdraw(ctx, []*Loader{l}, "aaaaaaaaaaaa", "test"); !errors.As(err, &ce) || !ce.Stored || ce.Host != "d.example" {
		t.Errorf("current in storage: %v", err)
	}
}
