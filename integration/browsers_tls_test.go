package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fingerprintGlobals are tlsGlobals with robots_fingerprint wrapping the
// listeners before tls.
func fingerprintGlobals() string {
	return globalsWith("\tservers {\n\t\tprotocols h1 h2\n\t\tlistener_wrappers {\n\t\t\trobots_fingerprint\n\t\t\ttls\n\t\t}\n\t}\n")
}

// forgedGet sends a request for url over Go's crypto/tls (a library's
// handshake) to ip (127.0.0.1 when empty), with ua and every header a
// browser sends (forgedBrowserHeaders), and returns the status and body.
func forgedGet(t *testing.T, cfg *tls.Config, ip, url, ua string) (int, string) {
	t.Helper()
	if ip == "" {
		ip = "127.0.0.1"
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(httpsPort)))
		}}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for _, h := range forgedBrowserHeaders {
		req.Header.Set(h[0], h[1])
	}
	if ua != "" {
		req.Header.Set("User-Agent", ua)
	}
	res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// TestRealBrowsersPeopleFirstTLSEnforced is TestRealBrowsersPeopleFirst
// with robots_fingerprint and `undeclared enforce`, which turns the tls
// signal to enforce: headed Chromium (with and without a User-Agent
// override) and Firefox ESR (and Firefox claiming Chrome) get every
// request of the page served (styles, images, fetch, a worker, a
// WebSocket, a download) and none is judged. Then, on the same config, a
// script over Go's crypto/tls that claims Chrome with every header forged
// is refused by the tls signal: the check that the signal was on.
func TestRealBrowsersPeopleFirstTLSEnforced(t *testing.T) {
	realBrowsersPeopleFirst(t, fingerprintGlobals())
	status, body := forgedGet(t, &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"}, "",
		"https://"+hostPort("localhost", httpsPort)+"/page.html", "")
	if status != http.StatusForbidden || !strings.Contains(body, "signal tls") {
		t.Errorf("a script claiming Chrome with forged headers, beside the browsers: %d\n%s", status, body)
	}
}

// TestTrapMarkFollowsTheHandshake: a script on the browser's own address
// takes the trap with headed Chromium's exact User-Agent. Its mark is the
// handshake's (Go's crypto/tls), so:
//   - the script keeps it when it changes one digit of its User-Agent and
//     forges every browser header (refused on a disallowed path, where the
//     tls signal, in its default log, refuses nothing);
//   - headed Chromium, same address, same User-Agent, different handshake,
//     is never touched by it: its page, styles, images, a fetch and a
//     fetch of a path robots.txt disallows are all served, and no request
//     of it is judged by the trap.
func TestTrapMarkFollowsTheHandshake(t *testing.T) {
	const host = "handshake.localhost"
	ca := newTestCA(t, host)
	b := newGalleryBackend(galleryPage(4, "/api/data", "/private/data"))
	backendAddr := serveLocal(t, b)
	newClient(t, fingerprintGlobals()+fmt.Sprintf(`
https://%s {
	tls %s %s
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		crawl_delay off
		strikes off
		trap /no-robots/
	}
	reverse_proxy %s
}
`, hostPort(host, httpsPort), ca.certFile, ca.keyFile, backendAddr))
	display := startXvfb(t)
	home, err := os.MkdirTemp("", "robots-handshake-")
	if err != nil {
		t.Fatal(err)
	}
	base := "https://" + hostPort(host, httpsPort)
	startBrowser(t, launchChromium(t, display, base+"/", home, ca, ""), home)
	eventually(t, 60*time.Second, "Chromium to load the first page", func() bool {
		ua, _ := b.browser()
		return ua != ""
	})
	browserUA, browserIP := b.browser()
	t.Logf("Chromium's User-Agent: %s, address %s", browserUA, browserIP)

	cfg := ca.clientTLS(t)
	cfg.ServerName = host
	script := func(path, ua string) int {
		s, _ := forgedGet(t, cfg, browserIP, base+path, ua)
		return s
	}
	if s := script("/private/before", browserUA); s != http.StatusOK {
		t.Fatalf("the script before the trap, with every header forged and tls in log: %d, want 200", s)
	}
	if s := script("/no-robots/", browserUA); s != http.StatusForbidden {
		t.Fatalf("the script's trap request: %d", s)
	}
	other := strings.Replace(browserUA, "Chrome/1", "Chrome/2", 1)
	if other == browserUA {
		t.Fatalf("cannot change a digit of %q", browserUA)
	}
	if s := script("/private/after", other); s != http.StatusForbidden {
		t.Errorf("the script with another User-Agent after the trap, same handshake: %d, want 403 (the mark follows the handshake)", s)
	}

	trapJudged := func() float64 {
		return undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="trap",mode="enforce"`) -
			undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="trap",action="trap"`) -
			undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="trap",action="trap_unmarked"`)
	}
	before := trapJudged()
	b.checkGalleryServed(t)
	if d := trapJudged() - before; d != 0 {
		t.Errorf("%v of the person's requests were judged by the script's trap mark, want 0", d)
	}
}

// checkGalleryServed lets the waiting browser go on to the gallery and
// checks that every request of it reached the backend.
func (b *galleryBackend) checkGalleryServed(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	b.seen = nil
	b.mu.Unlock()
	close(b.goCh)
	select {
	case <-b.done:
	case <-time.After(60 * time.Second):
		b.mu.Lock()
		defer b.mu.Unlock()
		t.Fatalf("Chromium did not finish the gallery; the backend got %q", b.seen)
	}
	b.mu.Lock()
	got := "\n" + strings.Join(b.seen, "\n") + "\n"
	b.mu.Unlock()
	want := []string{"GET /gallery.html", "GET /style.css", "GET /api/data", "GET /private/data", "GET /done.html"}
	for i := range 4 {
		want = append(want, fmt.Sprintf("GET /img/%d.svg", i))
	}
	for _, w := range want {
		if !strings.Contains(got, "\n"+w+"\n") {
			t.Errorf("the person's %s was refused; the backend got:%s", w, got)
		}
	}
}
