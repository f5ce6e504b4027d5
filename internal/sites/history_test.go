package sites

import (
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
