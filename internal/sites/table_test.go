package sites

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// newTestLoader starts a loader of kind FromSite (unless cfg says
// otherwise) on a new table; it stops with the test.
func newTestLoader(t testing.TB, cfg Config) *Loader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if cfg.MaxRuleMemory == 0 {
		cfg.MaxRuleMemory = 64 << 20
	}
	l, err := NewLoader(ctx, NewTable("site"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// setClock sets the coarse clock for the test, and back after it.
func setClock(t testing.TB, sec int64) {
	t.Helper()
	saved := clock.Load()
	t.Cleanup(func() { clock.Store(saved) })
	clock.Store(sec)
}

// TestTableLRU: the table keeps at most maxSites sites; when full it
// forgets the least recently used sites that are not proven, in use or
// not, and never a proven one; a site is one entry however it is reached
// (hot cache, view or map), and the hot cache never hands out an evicted
// site.
func TestTableLRU(t *testing.T) {
	l := newTestLoader(t, Config{})
	tb := l.t
	base := clock.Load()
	key := func(n string) key { return key{server: ":443", host: n} }

	setClock(t, base-3600) // an hour ago
	old, _ := tb.getOrAdd(key("old.example"))
	if again, added := tb.getOrAdd(key("old.example")); again != old || added {
		t.Fatal("the same site gave two entries")
	}
	real, _ := tb.getOrAdd(key("real.example"))
	if err := l.publish(real, []byte("User-agent: *\nDisallow: /private/\n")); err != nil {
		t.Fatal(err)
	}
	clock.Store(base)
	real.used.Store(base) // requested again an hour later: established
	tb.prove(real, real.snap.Load())
	if !real.proven.Load() {
		t.Fatal("a loaded, established site is not proven")
	}
	clock.Store(base - 30)
	active, _ := tb.getOrAdd(key("active.example")) // in use, not proven
	clock.Store(base)
	for i := range maxSites + 40 {
		n := fmt.Sprintf("h%d.example", i)
		st, _ := tb.getOrAdd(key(n))
		if st == nil {
			t.Fatalf("refused a site with %d in the table", len(tb.sites))
		}
		if st.key.host != n {
			t.Fatalf("getOrAdd(%q) returned the entry of %q", n, st.key.host)
		}
	}
	if len(tb.sites) > maxSites || len(*tb.view.Load()) != len(tb.sites) {
		t.Fatalf("table holds %d sites (view %d), max %d", len(tb.sites), len(*tb.view.Load()), maxSites)
	}
	if tb.lookup(key("old.example")) != nil {
		t.Error("the idle site was not the one forgotten")
	}
	if tb.lookup(key("active.example")) == active {
		t.Error("the least recently used unproven site was kept, though in use")
	}
	if tb.lookup(key("real.example")) != real || len(real.snap.Load().versions) != 1 {
		t.Error("a proven site was forgotten for new ones")
	}
	for i := range tb.hot {
		if st := tb.hot[i].Load(); st != nil && tb.sites[st.key] != st {
			t.Errorf("hot slot %d holds %q, which is not in the table", i, st.key.host)
		}
	}
	clock.Store(base + 3600)
	if st, added := tb.getOrAdd(key("new.example")); st == nil || !added || !st.snap.Load().Pending {
		t.Error("no room for a new site")
	}
}

// TestTableProvenPool: at most maxProven sites are proven; once they all
// are, a site is proven only in the place of one idle for longer than
// keepProven, and new Hosts, however many, churn among the others.
func TestTableProvenPool(t *testing.T) {
	l := newTestLoader(t, Config{})
	tb := l.t
	base := clock.Load()
	setClock(t, base)
	key := func(n string) key { return key{server: ":443", host: n} }
	body := []byte("User-agent: *\nDisallow: /private/\n")
	prove := func(n string, used int64) *site {
		st, _ := tb.getOrAdd(key(n))
		if len(st.snap.Load().versions) == 0 {
			if err := l.publish(st, body); err != nil {
				t.Fatal(err)
			}
		}
		st.born = used - establishAfter
		st.used.Store(used)
		st.tried.Store(0)
		tb.prove(st, st.snap.Load())
		return st
	}
	stale := prove("stale.example", base-keepProven-10)
	for i := range maxProven - 1 {
		prove(fmt.Sprintf("p%d.example", i), base)
	}
	if tb.proven != maxProven || !stale.proven.Load() {
		t.Fatalf("%d proven, want %d", tb.proven, maxProven)
	}
	late := prove("late.example", base)
	if !late.proven.Load() || stale.proven.Load() || tb.proven != maxProven {
		t.Fatalf("the stale site did not give its place up: late %v, stale %v, %d proven", late.proven.Load(), stale.proven.Load(), tb.proven)
	}
	later := prove("later.example", base)
	if later.proven.Load() || tb.proven != maxProven {
		t.Fatalf("a site was proven in the place of one in use: %d proven", tb.proven)
	}
	for i := range 3 * maxSites {
		if st, _ := tb.getOrAdd(key(fmt.Sprintf("flood%d.example", i))); st == nil {
			t.Fatalf("flood host %d refused", i)
		}
	}
	n := 0
	for _, st := range tb.sites {
		if st.proven.Load() {
			n++
		}
	}
	if n != maxProven || len(tb.sites) > maxSites || tb.lookup(key("late.example")) != late || tb.lookup(key("p0.example")) == nil {
		t.Errorf("after the flood: %d proven sites held (want %d), %d sites", n, maxProven, len(tb.sites))
	}
}

// TestSiteKeys: the same host name on two servers, and a name with a
// trailing dot, are distinct sites; case and port are not.
func TestSiteKeys(t *testing.T) {
	l := newTestLoader(t, Config{})
	l.SetServer(Server{Key: ":8080"})
	req := func(host string) *http.Request {
		r, _ := http.NewRequest("GET", "http://"+host+"/x", nil)
		return r
	}
	a := l.keyOf(req("localhost:8080"), "localhost")
	c := l.keyOf(req("LocalHost.:8080"), policy.HostOf("LocalHost.:8080"))
	if a == c || c.host != "localhost." || a.server != ":8080" {
		t.Errorf("keys %+v %+v", a, c)
	}
	if k := l.keyOf(req("Example.COM:443"), policy.HostOf("Example.COM:443")); k.host != "example.com" {
		t.Errorf("site name %q", k.host)
	}
	other := newTestLoader(t, Config{})
	other.t = l.t
	other.SetServer(Server{Key: ":9090"})
	if b := other.keyOf(req("localhost:9090"), "localhost"); b == a {
		t.Error("one host name on two servers is one site")
	}
}

// TestServerLearnt: a loader learns its server from the first request it
// can tell it from, and keeps it.
func TestServerLearnt(t *testing.T) {
	calls := 0
	l := newTestLoader(t, Config{ServerOf: func(r *http.Request) (Server, bool) {
		calls++
		if r.Header.Get("X-Server") == "" {
			return Server{}, false
		}
		return Server{Key: r.Header.Get("X-Server")}, true
	}})
	r, _ := http.NewRequest("GET", "http://a.example/", nil)
	if k := l.keyOf(r, "a.example"); k.server != "" || l.Server() != "" {
		t.Fatalf("server known from a request that does not tell it: %+v", k)
	}
	r.Header.Set("X-Server", ":1")
	l.keyOf(r, "a.example")
	r.Header.Set("X-Server", ":2")
	if k := l.keyOf(r, "a.example"); k.server != ":1" || l.Server() != ":1" || calls != 2 {
		t.Errorf("server %q (%d calls), want :1 asked twice", k.server, calls)
	}
}

// TestContentShared: sites serving the same robots.txt share one parsed
// version; the memory it counts is freed when the last site forgets it.
func TestContentShared(t *testing.T) {
	l := newTestLoader(t, Config{})
	body := []byte("User-agent: *\nDisallow: /private/\n" + strings.Repeat("# pad\n", 1000))
	var sts []*site
	for i := range 50 {
		st, _ := l.t.getOrAdd(key{host: fmt.Sprintf("h%d.example", i)})
		if err := l.publish(st, body); err != nil {
			t.Fatal(err)
		}
		sts = append(sts, st)
	}
	first := sts[0].snap.Load().versions[0].Robots
	for _, st := range sts {
		if st.snap.Load().versions[0].Robots != first {
			t.Fatal("the same content was parsed twice")
		}
	}
	if len(l.t.content) != 1 || l.t.RuleMemory() != int64(len(body))*parsedFactor+parsedBase {
		t.Errorf("content %d entries, %d bytes", len(l.t.content), l.t.RuleMemory())
	}
	for _, st := range sts {
		l.t.release(st.snap.Load().versions)
	}
	if len(l.t.content) != 0 || l.t.RuleMemory() != 0 {
		t.Errorf("after release: %d entries, %d bytes", len(l.t.content), l.t.RuleMemory())
	}
}

// TestRuleMemoryBound: past max_rule_memory, idle sites are forgotten
// first; when every site is in use, a new version is not kept and the site
// keeps its last good copy.
func TestRuleMemoryBound(t *testing.T) {
	one := int64(100<<10)*parsedFactor + parsedBase
	refused := &countingMetrics{}
	l := newTestLoader(t, Config{MaxRuleMemory: 2 * one, Metrics: refused})
	body := func(i int) []byte {
		return []byte(fmt.Sprintf("User-agent: *\nDisallow: /%d/\n%s", i, strings.Repeat("#", 100<<10-20)))[:100<<10]
	}
	base := clock.Load()
	setClock(t, base-3600)
	idle, _ := l.t.getOrAdd(key{host: "idle.example"})
	if err := l.publish(idle, body(1)); err != nil {
		t.Fatal(err)
	}
	clock.Store(base)
	a, _ := l.t.getOrAdd(key{host: "a.example"})
	b, _ := l.t.getOrAdd(key{host: "b.example"})
	if err := l.publish(a, body(2)); err != nil {
		t.Fatal(err)
	}
	if err := l.publish(b, body(3)); err != nil {
		t.Fatalf("the idle site was not forgotten to make room: %v", err)
	}
	if l.t.lookup(key{host: "idle.example"}) != nil {
		t.Error("idle site kept")
	}
	if err := l.publish(a, body(4)); !errors.Is(err, ErrRuleMemory) {
		t.Errorf("over the bound with every site active: %v, want ErrRuleMemory", err)
	}
	if v := a.snap.Load().versions; len(v) != 1 || v[0].ID != ContentID(body(2)) {
		t.Error("the site lost its last good copy")
	}
	if l.t.RuleMemory() > l.cfg.MaxRuleMemory {
		t.Errorf("rule memory %d over the bound %d", l.t.RuleMemory(), l.cfg.MaxRuleMemory)
	}
	if refused.refused.Load() != 1 {
		t.Errorf("%d refusals counted, want 1", refused.refused.Load())
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

// TestIsLoaderRequest: only the loader's own request is marked; a client
// that sends the loader's address is not it.
func TestIsLoaderRequest(t *testing.T) {
	var seen []bool
	srv := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, IsLoaderRequest(r))
	})
	if _, err := fetchVirtual(context.Background(), srv, "a.example", false, "/robots.txt"); err != nil {
		t.Fatal(err)
	}
	forged, _ := http.NewRequest("GET", "http://a.example/robots.txt", nil)
	forged.RemoteAddr = loaderRemoteAddr
	seen = append(seen, IsLoaderRequest(forged))
	if len(seen) != 2 || !seen[0] || seen[1] {
		t.Errorf("marked: %v, want [true false]", seen)
	}
}

// BenchmarkSnapshot is a bot request's lookup of its site among 1,000.
func BenchmarkSnapshot(b *testing.B) {
	f := &fakeSite{answer: always(200, "User-agent: *\nDisallow: /private/\n")}
	l := newSiteLoader(b, f, 8080, Config{})
	for i := range 1000 {
		snapshot(l, fmt.Sprintf("h%d.example", i))
	}
	r := request("h500.example:8080", "/x")
	b.ReportAllocs()
	for b.Loop() {
		l.Snapshot(r, "h500.example")
	}
}
