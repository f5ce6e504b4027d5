package sites

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// fakeSite is a server the loader sends its virtual requests through: it
// answers /robots.txt with answer and records the Host headers it saw.
type fakeSite struct {
	mu     sync.Mutex
	answer func(host string) (int, string)
	hosts  []string
}

func (f *fakeSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hosts = append(f.hosts, r.Host)
	answer := f.answer
	f.mu.Unlock()
	status, body := answer(r.Host)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func (f *fakeSite) set(answer func(host string) (int, string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer = answer
}

func (f *fakeSite) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.hosts...)
}

// always answers status and body whatever the Host.
func always(status int, body string) func(string) (int, string) {
	return func(string) (int, string) { return status, body }
}

// newSiteLoader is a loader whose server is f, listening on port.
func newSiteLoader(t testing.TB, f *fakeSite, port int, cfg Config) *Loader {
	t.Helper()
	l := newTestLoader(t, cfg)
	l.SetServer(Server{Handler: f, Key: ":" + strconv.Itoa(port), Port: port})
	return l
}

// request is a bot's GET of target with Host host.
func request(host, target string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "http://placeholder"+target, nil)
	r.Host = host
	return r
}

// snapshot is what the handler reads for a request with Host host.
func snapshot(l *Loader, host string) *Snapshot {
	return l.Snapshot(request(host, "/x"), policy.HostOf(host))
}

// TestLoaderHost: the loader names the site as the site would, whatever
// Host the request that made it load was spelt with.
func TestLoaderHost(t *testing.T) {
	for _, c := range []struct {
		port   int
		client string
		want   string
	}{
		{8080, "SHOP.example:1", "shop.example:8080"},
		{8080, "shop.example", "shop.example:8080"},
		{443, "Shop.Example:8443", "shop.example"},
		{80, "shop.example:80", "shop.example"},
		{0, "shop.example:9", "shop.example"},
		{8080, "Shop.Example.", "shop.example.:8080"},
		{8080, "[::1]:3", "[::1]:8080"},
		{443, "[::1]", "[::1]"},
	} {
		f := &fakeSite{answer: always(200, "User-agent: *\nDisallow: /private/\n")}
		l := newSiteLoader(t, f, c.port, Config{})
		if snap := snapshot(l, c.client); snap.Current() == nil {
			t.Errorf("%s on port %d: no rules", c.client, c.port)
		}
		if got := f.seen(); len(got) != 1 || got[0] != c.want {
			t.Errorf("client Host %q, port %d: the loader asked with %q, want %q", c.client, c.port, got, c.want)
		}
	}
}

// TestLoaderTooManyRequests: 429 keeps the last good copy, and before any
// copy the site is unavailable; it counts as a server error.
func TestLoaderTooManyRequests(t *testing.T) {
	f := &fakeSite{answer: always(200, "User-agent: *\nDisallow: /private/\n")}
	m := &countingMetrics{}
	l := newSiteLoader(t, f, 8080, Config{Metrics: m})
	before := snapshot(l, "a.example").Current()
	if before == nil {
		t.Fatal("no rules")
	}
	f.set(always(http.StatusTooManyRequests, "slow down"))
	res := Reload(context.Background(), []*Loader{l})
	if len(res) != 1 || res[0].Result != "server_error" || res[0].Version != before.ID {
		t.Errorf("reload: %+v", res)
	}
	if cur := snapshot(l, "a.example").Current(); cur == nil || cur.ID != before.ID {
		t.Error("a 429 replaced the last good copy")
	}
	if snap := snapshot(l, "b.example"); !snap.Unavailable || snap.Current() != nil {
		t.Errorf("a site whose first answer is 429: %+v, want unavailable", snap)
	}
	if n := m.count("server_error"); n != 2 {
		t.Errorf("%d server errors counted, want 2", n)
	}
}

// shortConfirm makes a change to no rules confirmable after d, for the
// test.
func shortConfirm(t *testing.T, d time.Duration) {
	t.Helper()
	t.Cleanup(SetConfirmDelay(d))
}

// TestNoRulesConfirmed: a change from rules to no rules (a 4xx, an empty
// body, a page with no group) is published only when a fetch at least
// the confirmation delay after the first that saw it still sees it; until
// then the last rules stay, and the status says a change is pending. The
// no-rules version is current from its first sighting.
func TestNoRulesConfirmed(t *testing.T) {
	shortConfirm(t, 200*time.Millisecond)
	for _, c := range []struct {
		name   string
		status int
		body   string
	}{
		{"404", http.StatusNotFound, "not here"},
		{"empty", http.StatusOK, ""},
		{"comments", http.StatusOK, "# nothing to say today\n"},
		{"error page", http.StatusOK, "<!doctype html><title>Oops</title>\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeSite{answer: always(200, "User-agent: *\nDisallow: /private/\n")}
			l := newSiteLoader(t, f, 8080, Config{})
			rules := snapshot(l, "a.example").Current()
			f.set(always(c.status, c.body))
			Reload(context.Background(), []*Loader{l})
			seen := time.Now()
			if cur := snapshot(l, "a.example").Current(); cur == nil || cur.ID != rules.ID {
				t.Fatalf("the first sighting of %s replaced the rules", c.name)
			}
			st := l.Status()[0]
			if st.Unconfirmed == nil || st.State != "ok" || len(st.Versions) != 1 {
				t.Fatalf("status: %+v", st)
			}
			if st.NextFetch.After(st.Unconfirmed.ConfirmAt) || st.Unconfirmed.ConfirmAt.Sub(seen) > 200*time.Millisecond {
				t.Errorf("next fetch %v, confirmable at %v: the confirming fetch is not scheduled", st.NextFetch, st.Unconfirmed.ConfirmAt)
			}
			// Too early: still the rules.
			Reload(context.Background(), []*Loader{l})
			if cur := snapshot(l, "a.example").Current(); cur.ID != rules.ID {
				t.Fatal("confirmed before the delay")
			}
			time.Sleep(250 * time.Millisecond)
			res := Reload(context.Background(), []*Loader{l})
			snap := snapshot(l, "a.example")
			if len(snap.Judged) != 2 || snap.Judged[1].ID != rules.ID || res[0].Unconfirmed != nil {
				t.Fatalf("after the delay: %d versions, reload %+v", len(snap.Judged), res)
			}
			noRules, old := snap.Judged[0], snap.Judged[1]
			if !noRules.From.Equal(old.Until) || noRules.From.Before(seen.Add(-time.Second)) || noRules.From.After(seen) {
				t.Errorf("no rules from %v, rules until %v; first seen %v", noRules.From, old.Until, seen)
			}
			if l.Status()[0].Unconfirmed != nil {
				t.Error("still pending once published")
			}
		})
	}
}

// TestNoRulesNotConfirmed: a blip of no rules between two fetches that
// see the rules publishes nothing; with no rules in force, or before any
// copy, no rules are published at once.
func TestNoRulesNotConfirmed(t *testing.T) {
	shortConfirm(t, 100*time.Millisecond)
	rules := always(200, "User-agent: *\nDisallow: /private/\n")
	f := &fakeSite{answer: rules}
	l := newSiteLoader(t, f, 8080, Config{})
	first := snapshot(l, "a.example").Current()
	f.set(always(http.StatusNotFound, ""))
	Reload(context.Background(), []*Loader{l})
	time.Sleep(150 * time.Millisecond)
	f.set(rules)
	Reload(context.Background(), []*Loader{l})
	f.set(always(http.StatusNotFound, ""))
	Reload(context.Background(), []*Loader{l}) // a new first sighting
	if snap := snapshot(l, "a.example"); len(snap.Judged) != 1 || snap.Judged[0].ID != first.ID {
		t.Errorf("a blip of no rules changed the versions: %d", len(snap.Judged))
	}

	g := &fakeSite{answer: always(http.StatusNotFound, "")}
	m := newSiteLoader(t, g, 8080, Config{})
	if snap := snapshot(m, "new.example"); snap.Current() == nil || len(snap.Judged) != 1 {
		t.Fatal("a first answer of 404 is not published at once")
	}
	// No rules after no rules: nothing to confirm (and the same rules,
	// none, in another body: the same version).
	g.set(always(200, "# nothing\n"))
	Reload(context.Background(), []*Loader{m})
	if snap := snapshot(m, "new.example"); len(snap.Judged) != 1 || m.Status()[0].Unconfirmed != nil {
		t.Errorf("no rules after no rules: %d versions, pending %v", len(snap.Judged), m.Status()[0].Unconfirmed)
	}
}

// TestNoRulesConfirmedFile: a robots.txt file emptied (as an editor does
// before it writes) keeps its rules until a later poll still finds it
// empty.
func TestNoRulesConfirmedFile(t *testing.T) {
	shortConfirm(t, 300*time.Millisecond)
	file := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(file, []byte("User-agent: *\nDisallow: /a/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := newTestLoader(t, Config{Kind: FromFile, File: file, Refresh: time.Second})
	rules := l.Lookup(nil, "").Current()
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	Reload(context.Background(), []*Loader{l})
	if cur := l.Lookup(nil, "").Current(); cur.ID != rules.ID || l.Status()[0].Unconfirmed == nil {
		t.Fatal("an emptied file replaced the rules at once")
	}
	// The watcher polls every second: it confirms.
	deadline := time.Now().Add(5 * time.Second)
	for l.Lookup(nil, "").Current().ID == rules.ID {
		if time.Now().After(deadline) {
			t.Fatal("the emptied file was never confirmed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
