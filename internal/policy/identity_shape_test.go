package policy

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestClientShapeProperties: a shape is the program's, not the request's:
// the User-Agent, the target, the order of the headers, per-request
// headers and the case of Connection change nothing; another header, an
// Accept value or the HTTP version does; a TLS fingerprint decides alone.
func TestClientShapeProperties(t *testing.T) {
	req := func(target, ua string, kv ...string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		r.Header.Set("User-Agent", ua)
		for i := 0; i < len(kv); i += 2 {
			r.Header.Add(kv[i], kv[i+1])
		}
		return r
	}
	base := shapeOf(req("/", "Rnd1/1.0", "Accept", "*/*", "Accept-Encoding", "gzip", "Connection", "Keep-Alive"), "")
	for name, r := range map[string]*http.Request{
		"another name and target": req("/p01.html", "Rnd2/1.0", "Accept", "*/*", "Accept-Encoding", "gzip", "Connection", "Keep-Alive"),
		"another order":           req("/", "Rnd3/1.0", "Connection", "Keep-Alive", "Accept-Encoding", "gzip", "Accept", "*/*"),
		"per-request headers":     req("/x", "Rnd4/1.0", "Accept", "*/*", "Referer", "http://site/", "Cookie", "a=b", "If-Modified-Since", "Sat, 28 Nov 2026 09:00:00 GMT", "Accept-Encoding", "gzip", "Connection", "Keep-Alive"),
		"Connection's case":       req("/", "Rnd5/1.0", "Accept", "*/*", "Accept-Encoding", "gzip", "Connection", "keep-alive"),
	} {
		if got := shapeOf(r, ""); got != base {
			t.Errorf("%s changed the shape", name)
		}
	}
	for name, r := range map[string]*http.Request{
		"no Connection":       req("/", "Rnd1/1.0", "Accept", "*/*", "Accept-Encoding", "gzip"),
		"another Accept":      req("/", "Rnd1/1.0", "Accept", "text/html", "Accept-Encoding", "gzip", "Connection", "Keep-Alive"),
		"another header":      req("/", "Rnd1/1.0", "Accept", "*/*", "Accept-Encoding", "gzip", "Connection", "Keep-Alive", "X-Rnd", "1"),
		"Accept-Language":     req("/", "Rnd1/1.0", "Accept", "*/*", "Accept-Encoding", "gzip", "Connection", "Keep-Alive", "Accept-Language", "en"),
		"values moved around": req("/", "Rnd1/1.0", "Accept", "gzip", "Accept-Encoding", "*/*", "Connection", "Keep-Alive"),
	} {
		if got := shapeOf(r, ""); got == base {
			t.Errorf("%s left the shape unchanged", name)
		}
	}
	h2 := req("/", "Rnd1/1.0", "Accept", "*/*", "Accept-Encoding", "gzip", "Connection", "Keep-Alive")
	h2.ProtoMajor, h2.ProtoMinor = 2, 0
	if shapeOf(h2, "") == base {
		t.Error("the HTTP version left the shape unchanged")
	}
	const ja4 = "t13d1516h2_8daaf6152771_02713d6af862"
	tls1 := shapeOf(req("/", "Rnd1/1.0", "Accept", "*/*"), ja4)
	tls2 := shapeOf(req("/", "Rnd2/1.0", "Accept", "text/html", "X-Rnd", "2"), ja4)
	if tls1 != tls2 || tls1 == base {
		t.Error("over TLS the handshake's fingerprint is not the shape")
	}
	if shapeOf(req("/", "Rnd1/1.0"), "t13d1516h2_8daaf6152771_b0da82dd1658") == tls1 {
		t.Error("two fingerprints share a shape")
	}
}

// shapeOf is the shape of the client that sent r, as the server reads it.
func shapeOf(r *http.Request, tlsFingerprint string) uint64 {
	return ClientShape(r.Header, r.ProtoMajor, r.ProtoMinor, tlsFingerprint)
}

// TestClientShapeStable: a shape names a pool in a store that several
// instances share, across versions of the server: its value for a given
// request does not change (these are the values of the first release
// that pooled by shape).
func TestClientShapeStable(t *testing.T) {
	wget := http.Header{"User-Agent": {"Wget/1.21.3"}, "Accept": {"*/*"}, "Accept-Encoding": {"identity"},
		"Connection": {"Keep-Alive"}, "Referer": {"http://127.0.0.1/"}}
	h2 := http.Header{"User-Agent": {"x"}, "Accept": {"text/html", " a/b "}, "Accept-Language": {"en-US,en;q=0.9"},
		"Connection": {"Keep-Alive,  TE"}, "X-Rnd": {"1"}, "Cookie": {"REDACTED"}}
	for _, c := range []struct {
		name         string
		h            http.Header
		major, minor int
		fp           string
		want         uint64
	}{
		{"wget over HTTP/1.1", wget, 1, 1, "", 0x63355bb1d7daea5d},
		{"several values over HTTP/2", h2, 2, 0, "", 0x7d3ea881b6a1e4d9},
		{"a TLS fingerprint", h2, 2, 0, "t13d1516h2_8daaf6152771_02713d6af862", 0x4d46e5c169b85cc},
	} {
		if got := ClientShape(c.h, c.major, c.minor, c.fp); got != c.want {
			t.Errorf("%s: shape %#x, want %#x", c.name, got, c.want)
		}
	}
}

// TestClientShapeOfRealPrograms: real programs (wget, wget2, curl,
// HTTrack, Python's urllib, Go's net/http) request a real server's pages:
// every program has one shape over all its requests (wget sends Referer
// from its second page on), and no two programs share one, whatever
// User-Agent each sends.
func TestClientShapeOfRealPrograms(t *testing.T) {
	var mu sync.Mutex
	shapes := map[string]map[uint64]bool{} // program → shapes of its page requests
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("User-agent: *\nAllow: /\n"))
			return
		case "/":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`<html><body><a href="/a.html">a</a></body></html>`))
		case "/a.html":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`<html><body><a href="/b.html">b</a></body></html>`))
		default:
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html><body>b</body></html>"))
		}
		prog, _, _ := strings.Cut(r.Header.Get("User-Agent"), "/")
		mu.Lock()
		defer mu.Unlock()
		if shapes[prog] == nil {
			shapes[prog] = map[uint64]bool{}
		}
		shapes[prog][shapeOf(r, "")] = true
	}))
	defer srv.Close()
	need := func(name string) string {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("%s is not on PATH: scripts/need-crawlers.sh installs it", name)
		}
		return p
	}
	dir := t.TempDir()
	rc := filepath.Join(dir, "wgetrc")
	if err := os.WriteFile(rc, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+dir, "WGETRC="+rc)
	start := srv.URL + "/"
	runs := map[string]*exec.Cmd{
		"wget":    exec.Command(need("wget"), "-r", "-l", "inf", "-nv", "-P", t.TempDir(), "--tries=1", "-U", "wget/1", start),
		"wget2":   exec.Command(need("wget2"), "-r", "-l", "inf", "--max-threads=1", "-nv", "-P", t.TempDir(), "--tries=1", "-U", "wget2/1", start),
		"curl":    exec.Command(need("curl"), "-s", "-o", "/dev/null", "-A", "curl/1", start, start+"a.html"),
		"httrack": exec.Command(need("httrack"), start, "-O", t.TempDir(), "-c1", "-%k0", "-R0", "-q", "-%v0", "-F", "httrack/1"),
		"python": exec.Command(need("python3"), "-c", `import sys, urllib.request
for u in sys.argv[1:]:
    urllib.request.urlopen(urllib.request.Request(u, headers={"User-Agent": "python/1"})).read()`, start, start+"a.html"),
	}
	for name, cmd := range runs {
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	for _, u := range []string{start, start + "a.html"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("User-Agent", "go/1")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}

	mu.Lock()
	defer mu.Unlock()
	owner := map[uint64]string{}
	for _, prog := range []string{"wget", "wget2", "curl", "httrack", "python", "go"} {
		got := shapes[prog]
		if len(got) != 1 {
			t.Errorf("%s: %d shapes over its requests, want 1", prog, len(got))
		}
		for s := range got {
			if o, ok := owner[s]; ok {
				t.Errorf("%s and %s share a shape", prog, o)
			}
			owner[s] = prog
		}
	}
}

// BenchmarkClientShape is what an unproven name's request on a rotating
// address pays for its shape over plain HTTP (wget's headers).
func BenchmarkClientShape(b *testing.B) {
	r := httptest.NewRequest(http.MethodGet, "/p01.html", nil)
	for k, v := range map[string]string{"User-Agent": "Wget/1.21.3", "Accept": "*/*", "Accept-Encoding": "identity", "Connection": "Keep-Alive", "Referer": "http://127.0.0.1/"} {
		r.Header.Set(k, v)
	}
	b.ReportAllocs()
	for b.Loop() {
		shapeOf(r, "")
	}
}
