package caddyrobots

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

func newTestTable() *ruleSource {
	return &ruleSource{
		h:         &Handler{Source: "site", logger: zap.NewNop(), warn: &logLimiter{}, now: time.Now, maxRuleMemory: DefaultMaxRuleMemory},
		site:      true,
		hostTable: newHostTable(),
	}
}

// TestHostTableLRU: the table keeps at most maxHosts sites; when full it
// forgets the least recently used idle sites, never one in active use; a
// site is one entry however it is reached (hot cache, view or map), and
// the hot cache never hands out an evicted site.
func TestHostTableLRU(t *testing.T) {
	s := newTestTable()
	base := coarseNow.Load()
	defer coarseNow.Store(base)
	key := func(n string) siteKey { return siteKey{server: ":443", host: n} }

	coarseNow.Store(base - 3600) // an hour ago
	old, _ := s.getOrAdd(key("old.example"))
	if again, added := s.getOrAdd(key("old.example")); again != old || added {
		t.Fatal("the same site gave two entries")
	}
	coarseNow.Store(base)
	active, _ := s.getOrAdd(key("active.example")) // in use now
	for i := range maxHosts + 40 {
		n := fmt.Sprintf("h%d.example", i)
		hr, _ := s.getOrAdd(key(n))
		if hr == nil {
			// Every site is in active use: the table refuses new ones
			// rather than forget one that serves traffic.
			if len(s.hosts) < maxHosts {
				t.Fatalf("refused a site with %d in the table", len(s.hosts))
			}
			break
		}
		if hr.key.host != n {
			t.Fatalf("getOrAdd(%q) returned the entry of %q", n, hr.key.host)
		}
	}
	if len(s.hosts) > maxHosts || len(*s.view.Load()) != len(s.hosts) {
		t.Fatalf("table holds %d sites (view %d), max %d", len(s.hosts), len(*s.view.Load()), maxHosts)
	}
	if s.lookup(key("old.example")) != nil {
		t.Error("the idle site was not the one forgotten")
	}
	if s.lookup(key("active.example")) != active {
		t.Error("a site in active use was forgotten")
	}
	for i := range s.hot {
		if hr := s.hot[i].Load(); hr != nil && s.hosts[hr.key] != hr {
			t.Errorf("hot slot %d holds %q, which is not in the table", i, hr.key.host)
		}
	}
	// Once they go idle, room is made again.
	coarseNow.Store(base + 3600)
	if hr, added := s.getOrAdd(key("new.example")); hr == nil || !added || !hr.snap.Load().pending {
		t.Error("no room for a new site after the others went idle")
	}
}

// TestSiteKeys: the same host name on two servers, and a name with a
// trailing dot, are distinct sites.
func TestSiteKeys(t *testing.T) {
	s := newTestTable()
	a, _ := s.getOrAdd(siteKey{server: ":8080", host: "localhost"})
	b, _ := s.getOrAdd(siteKey{server: ":9090", host: "localhost"})
	c, _ := s.getOrAdd(siteKey{server: ":8080", host: siteName("LocalHost.:8080", hostOf("LocalHost.:8080"))})
	if a == b || a == c || c.key.host != "localhost." {
		t.Errorf("sites share entries: %p %p %p (%q)", a, b, c, c.key.host)
	}
	if h := siteName("Example.COM:443", hostOf("Example.COM:443")); h != "example.com" {
		t.Errorf("siteName = %q", h)
	}
}

// TestContentShared: sites serving the same robots.txt share one parsed
// version; the memory it counts is freed when the last site forgets it.
func TestContentShared(t *testing.T) {
	s := newTestTable()
	body := []byte("User-agent: *\nDisallow: /private/\n" + strings.Repeat("# pad\n", 1000))
	var sites []*hostRules
	for i := range 50 {
		hr, _ := s.getOrAdd(siteKey{host: fmt.Sprintf("h%d.example", i)})
		if err := s.publish(hr, body); err != nil {
			t.Fatal(err)
		}
		sites = append(sites, hr)
	}
	first := sites[0].snap.Load().versions[0].Robots
	for _, hr := range sites {
		if hr.snap.Load().versions[0].Robots != first {
			t.Fatal("the same content was parsed twice")
		}
	}
	if len(s.content) != 1 || s.ruleBytes != int64(len(body))*parsedFactor+parsedBase {
		t.Errorf("content %d entries, %d bytes", len(s.content), s.ruleBytes)
	}
	for _, hr := range sites {
		s.releaseVersions(hr.snap.Load().versions)
	}
	if len(s.content) != 0 || s.ruleBytes != 0 {
		t.Errorf("after release: %d entries, %d bytes", len(s.content), s.ruleBytes)
	}
}

// TestRuleMemoryBound: past max_rule_memory, idle sites are forgotten
// first; when every site is in use, a new version is not kept and the site
// keeps its last good copy.
func TestRuleMemoryBound(t *testing.T) {
	s := newTestTable()
	one := int64(100<<10)*parsedFactor + parsedBase
	s.h.maxRuleMemory = 2 * one
	body := func(i int) []byte {
		return []byte(fmt.Sprintf("User-agent: *\nDisallow: /%d/\n%s", i, strings.Repeat("#", 100<<10-20)))[:100<<10]
	}
	base := coarseNow.Load()
	defer coarseNow.Store(base)
	coarseNow.Store(base - 3600)
	idle, _ := s.getOrAdd(siteKey{host: "idle.example"})
	if err := s.publish(idle, body(1)); err != nil {
		t.Fatal(err)
	}
	coarseNow.Store(base)
	a, _ := s.getOrAdd(siteKey{host: "a.example"})
	b, _ := s.getOrAdd(siteKey{host: "b.example"})
	if err := s.publish(a, body(2)); err != nil {
		t.Fatal(err)
	}
	if err := s.publish(b, body(3)); err != nil {
		t.Fatalf("the idle site was not forgotten to make room: %v", err)
	}
	if s.lookup(siteKey{host: "idle.example"}) != nil {
		t.Error("idle site kept")
	}
	if err := s.publish(a, body(4)); !errors.Is(err, errRuleMemory) {
		t.Errorf("over the bound with every site active: %v, want errRuleMemory", err)
	}
	if v := a.snap.Load().versions; len(v) != 1 || v[0].ID != contentID(body(2)) {
		t.Error("the site lost its last good copy")
	}
	if s.ruleBytes > s.h.maxRuleMemory {
		t.Errorf("rule memory %d over the bound %d", s.ruleBytes, s.h.maxRuleMemory)
	}
}

// TestCaptureWriterComplete: a body is whole only when the declared length
// was reached and nothing aborted it; a body cut by our own cap is whole
// enough.
func TestCaptureWriterComplete(t *testing.T) {
	w := newCaptureWriter(100)
	w.Header().Set("Content-Length", "1034")
	w.WriteHeader(200)
	_, _ = w.Write(make([]byte, 29))
	if err := w.complete(nil); err == nil {
		t.Error("29 of 1034 bytes taken as complete")
	}
	w = newCaptureWriter(100)
	w.WriteHeader(200)
	_, _ = w.Write(make([]byte, 50))
	if err := w.complete(http.ErrAbortHandler); err == nil {
		t.Error("an aborted body taken as complete")
	}
	if err := w.complete(nil); err != nil {
		t.Errorf("50 bytes, no length declared: %v", err)
	}
	w = newCaptureWriter(100)
	w.Header().Set("Content-Length", "5000")
	w.WriteHeader(200)
	if _, err := w.Write(make([]byte, 5000)); err == nil {
		t.Error("no error past the cap")
	}
	if err := w.complete(http.ErrAbortHandler); err != nil || w.buf.Len() != 100 {
		t.Errorf("cut by the cap: %v, %d bytes", err, w.buf.Len())
	}
}
