package sites

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// redirectingSite is a site whose /robots.txt answers a redirect to
// location, through the loader's virtual request.
func redirectingSite(location string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, location, http.StatusMovedPermanently)
	})
}

// chainServer is another host: /hN redirects to /h(N+1) until /h<last>,
// which answers body. hits counts its requests.
func chainServer(t *testing.T, last int, body string, hits *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("User-Agent") != LoaderUserAgent {
			t.Errorf("remote fetch sent User-Agent %q", r.Header.Get("User-Agent"))
		}
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/h"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		if n < last {
			http.Redirect(w, r, "/h"+strconv.Itoa(n+1), http.StatusFound)
			return
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func siteLoaderOf(t *testing.T, h http.Handler) *Loader {
	t.Helper()
	l := newTestLoader(t, Config{})
	l.SetServer(Server{Handler: h, Key: ":8080", Port: 8080})
	return l
}

// TestRedirectToAnotherHost: a /robots.txt that redirects to another host
// is read there, as RFC 9309 §2.3.1.2 crawlers do, and the URL is shown.
func TestRedirectToAnotherHost(t *testing.T) {
	const body = "User-agent: *\nDisallow: /from-static/\n"
	var hits atomic.Int64
	static := chainServer(t, 1, body, &hits)
	l := siteLoaderOf(t, redirectingSite(static.URL+"/h1"))
	cur := snapshot(l, "a.example").Current()
	if cur == nil || cur.ID != ContentID([]byte(body)) {
		t.Fatalf("current version %+v, want the other host's file", cur)
	}
	st := l.Status()[0]
	if st.FinalURL != static.URL+"/h1" || st.LastResult != "ok" {
		t.Errorf("status: final URL %q, result %q", st.FinalURL, st.LastResult)
	}
	if len(st.Versions) != 1 || st.Versions[0].FinalURL != static.URL+"/h1" {
		t.Errorf("version keeps final URL %+v", st.Versions)
	}
}

// TestRedirectHops: five redirects in all (one on the site, four on the
// other host) are followed; a sixth is not, and the file is taken as
// unavailable (no rules), with why.
func TestRedirectHops(t *testing.T) {
	const body = "User-agent: *\nDisallow: /deep/\n"
	for _, c := range []struct {
		last int // the other host redirects from /h1 to /h<last>
		ok   bool
	}{{5, true}, {6, false}} {
		var hits atomic.Int64
		static := chainServer(t, c.last, body, &hits)
		l := siteLoaderOf(t, redirectingSite(static.URL+"/h1"))
		cur := snapshot(l, "a.example").Current()
		st := l.Status()[0]
		if c.ok {
			if cur == nil || cur.ID != ContentID([]byte(body)) || st.LastResult != "ok" {
				t.Errorf("5 redirects: %+v, %+v", cur, st)
			}
			continue
		}
		if cur == nil || cur.ID != ContentID(nil) || st.LastResult != "redirect" || !strings.Contains(st.LastError, "more than 5 redirects") {
			t.Errorf("6 redirects: version %+v, result %q %q", cur, st.LastResult, st.LastError)
		}
		if hits.Load() != 5 {
			t.Errorf("6 redirects: the other host was asked %d times, want 5", hits.Load())
		}
	}
}

// TestRedirectLoopAndScheme: a redirect back to a URL already visited, or
// to a scheme other than http(s), is refused at once: no rules, with why.
func TestRedirectLoopAndScheme(t *testing.T) {
	var hits atomic.Int64
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "http://a.example:8080/robots.txt", http.StatusFound)
	}))
	t.Cleanup(back.Close)
	for _, c := range []struct {
		location, why string
	}{
		{back.URL + "/robots.txt", "redirect loop at http://a.example:8080/robots.txt"},
		{"ftp://static.example/robots.txt", "not an http or https URL"},
	} {
		l := siteLoaderOf(t, redirectingSite(c.location))
		cur := snapshot(l, "a.example").Current()
		st := l.Status()[0]
		if cur == nil || cur.ID != ContentID(nil) || st.LastResult != "redirect" || !strings.Contains(st.LastError, c.why) {
			t.Errorf("%s: version %+v, result %q %q", c.location, cur, st.LastResult, st.LastError)
		}
	}
	if hits.Load() != 1 {
		t.Errorf("the loop's other host was asked %d times, want 1", hits.Load())
	}
}

// TestRedirectRemoteStatus: the other host's answer is read with RFC 9309's
// status rules: a 404 is no rules, a 503 leaves the site unavailable
// (no copy yet) or keeps the last good copy.
func TestRedirectRemoteStatus(t *testing.T) {
	var status atomic.Int64
	status.Store(http.StatusServiceUnavailable)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
		fmt.Fprint(w, "User-agent: *\nDisallow: /\n")
	}))
	t.Cleanup(remote.Close)
	l := siteLoaderOf(t, redirectingSite(remote.URL+"/robots.txt"))
	if snap := snapshot(l, "a.example"); !snap.Unavailable {
		t.Errorf("503 from the other host, no copy yet: not unavailable")
	}
	status.Store(http.StatusNotFound)
	Reload(context.Background(), []*Loader{l})
	if cur := snapshot(l, "a.example").Current(); cur == nil || cur.ID != ContentID(nil) {
		t.Errorf("404 from the other host: %+v, want no rules", cur)
	}
	if st := l.Status()[0]; st.LastResult != "client_error" || st.FinalURL != remote.URL+"/robots.txt" {
		t.Errorf("404 status: %+v", st)
	}
}

// TestSameHostOtherPort: a redirect to the same host on another port is
// another authority, fetched from there, not through the site's server.
func TestSameHostOtherPort(t *testing.T) {
	const body = "User-agent: *\nDisallow: /port/\n"
	var hits atomic.Int64
	other := chainServer(t, 1, body, &hits)
	port := other.URL[strings.LastIndexByte(other.URL, ':')+1:]
	var own atomic.Int64
	site := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		own.Add(1)
		if r.URL.Path == "/robots.txt" {
			http.Redirect(w, r, "http://127.0.0.1:"+port+"/h1", http.StatusMovedPermanently)
			return
		}
		fmt.Fprint(w, "User-agent: *\nDisallow: /wrong/\n")
	})
	l := siteLoaderOf(t, site)
	if cur := snapshot(l, "127.0.0.1").Current(); cur == nil || cur.ID != ContentID([]byte(body)) {
		t.Errorf("same host, other port: %+v", cur)
	}
	if own.Load() != 1 || hits.Load() != 1 {
		t.Errorf("requests: site %d, other port %d; want 1 and 1", own.Load(), hits.Load())
	}
}

// TestRedirectRemoteBounds: the other host's answer has the bounds of the
// site's own: the 500 KiB cap (the rest is not read), a body that breaks
// off is an error, and the fetch timeout covers the whole chain.
func TestRedirectRemoteBounds(t *testing.T) {
	release := make(chan struct{})
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/huge":
			fmt.Fprint(w, "User-agent: *\nDisallow: /early/\n")
			line := strings.Repeat("#", 1023) + "\n"
			for range 2048 { // 2 MiB
				if _, err := fmt.Fprint(w, line); err != nil {
					return
				}
			}
		case "/short":
			w.Header().Set("Content-Length", "1000")
			fmt.Fprint(w, "User-agent: *\n")
		case "/slow":
			<-release
		}
	}))
	t.Cleanup(func() { close(release); remote.Close() })

	l := siteLoaderOf(t, redirectingSite(remote.URL+"/huge"))
	cur := snapshot(l, "a.example").Current()
	if cur == nil || len(cur.Robots.Groups()) != 1 {
		t.Errorf("2 MiB answer: %+v, want the rules of its first 500 KiB", cur)
	}
	for _, c := range []struct{ path, why string }{
		{"/short", "incomplete"},
		{"/slow", "deadline exceeded"},
	} {
		l := newTestLoader(t, Config{FetchTimeout: 300 * time.Millisecond})
		l.SetServer(Server{Handler: redirectingSite(remote.URL + c.path), Key: ":8080", Port: 8080})
		start := time.Now()
		if snap := snapshot(l, "a.example"); !snap.Unavailable {
			t.Errorf("%s: not unavailable", c.path)
		}
		if st := l.Status()[0]; st.LastResult != "error" || !strings.Contains(st.LastError, c.why) {
			t.Errorf("%s: %q %q", c.path, st.LastResult, st.LastError)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s took %s with a 300ms fetch timeout", c.path, took)
		}
	}
}
