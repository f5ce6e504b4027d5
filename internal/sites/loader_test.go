package sites

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
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
func newSiteLoader(t *testing.T, f *fakeSite, port int, cfg Config) *Loader {
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
	return l.Snapshot(request(host, "/x"), hostOf(host))
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
