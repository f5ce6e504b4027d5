package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/internal/chromiumtest"
)

// The parts of GET /robots/status's "tls" the tests read.
type (
	tlsStatusReport struct {
		Handlers []struct {
			SiteBlock string    `json:"site_block"`
			TLS       tlsStatus `json:"tls"`
		} `json:"handlers"`
	}
	tlsStatus struct {
		WithFingerprint    int              `json:"with_fingerprint"`
		WithoutFingerprint int              `json:"without_fingerprint"`
		Logged             []tlsStatusEntry `json:"logged"`
		Enforced           []tlsStatusEntry `json:"enforced"`
	}
	tlsStatusEntry struct {
		JA4       string    `json:"ja4"`
		Engine    string    `json:"engine"`
		Why       string    `json:"why"`
		Claimed   []string  `json:"claimed"`
		Requests  int       `json:"requests"`
		Networks  []string  `json:"networks"`
		FirstSeen time.Time `json:"first_seen"`
		LastSeen  time.Time `json:"last_seen"`
	}
)

// tlsStatusOf returns the tls status of the handler whose site block
// names host.
func tlsStatusOf(t *testing.T, host string) tlsStatus {
	t.Helper()
	var rep tlsStatusReport
	adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &rep)
	for _, h := range rep.Handlers {
		if strings.HasPrefix(h.SiteBlock, host+" ") {
			return h.TLS
		}
	}
	t.Fatalf("no handler for %s in /robots/status", host)
	return tlsStatus{}
}

// tlsStatusConfig serves host over HTTPS on httpsPort, wrapped by
// robots_fingerprint, and bare on altPort, without it (both answering
// with the request's JA4), and the status page on status.localhost;
// signals is the undeclared block's content ("" for the defaults: tls in
// log).
func tlsStatusConfig(ca testCA, host, bare, signals string) string {
	robots := "\trobots {\n\t\tsource inline \"User-agent: *\\nDisallow: /private/\\n\"\n\t\tcrawl_delay off\n\t\tstrikes off\n"
	if signals != "" {
		robots += "\t\tundeclared {\n\t\t\t" + signals + "\n\t\t}\n"
	}
	robots += "\t}\n\trespond \"{http.robots.tls_fingerprint}\"\n"
	return globalsWith(fmt.Sprintf("\tservers :%d {\n\t\tprotocols h1 h2\n\t\tlistener_wrappers {\n\t\t\trobots_fingerprint\n\t\t\ttls\n\t\t}\n\t}\n\tservers {\n\t\tprotocols h1 h2\n\t}\n", httpsPort)) +
		fmt.Sprintf("https://%s {\n\ttls %s %s\n%s}\n\nhttps://%s {\n\ttls %s %s\n%s}\n\n",
			hostPort(host, httpsPort), ca.certFile, ca.keyFile, robots, hostPort(bare, altPort), ca.certFile, ca.keyFile, robots) +
		statusPageSite("status.localhost")
}

// TestTLSStatusByFingerprint: the status (GET /robots/status and the
// status page) shows, per site block, whom the tls signal judged, by
// fingerprint, through a real Caddy over HTTPS with robots_fingerprint:
//   - a Go client claiming Chrome with every browser header forged, from
//     two addresses, in the default tls log: served, and listed under
//     "logged" with its own JA4 (the one the server computed), engine
//     library, claim Chrome, its request count and both networks;
//   - headless and headed Chromium, on the same site, on an allowed and a
//     disallowed path: counted among the requests with a fingerprint, never
//     listed;
//   - after a reload with `tls enforce` (same site block, counts kept):
//     the Go client is refused and listed under "enforced";
//   - a server without the wrapper: its requests are counted as having no
//     fingerprint, nobody is listed, and the page says the signal sees
//     nothing.
//
// The page's section is looked at in real headless Chromium.
func TestTLSStatusByFingerprint(t *testing.T) {
	const host, bare = "tlsstatus.localhost", "tlsbare.localhost"
	chromium := chromiumtest.Find(t)
	ca := newTestCA(t, host, bare)
	c := newClient(t, tlsStatusConfig(ca, host, bare, ""))
	base := "https://" + hostPort(host, httpsPort)
	cfg := ca.clientTLS(t)
	cfg.ServerName = host

	before := tlsStatusOf(t, host)
	if len(before.Logged)+len(before.Enforced) != 0 || before.WithFingerprint != 0 {
		t.Fatalf("status before any request: %+v", before)
	}
	var scriptJA4 string
	for i, ip := range []string{"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2"} {
		status, body := scriptGet(t, cfg, ip, httpsPort, fmt.Sprintf("%s/private/%d", base, i))
		if status != http.StatusOK || !strings.HasPrefix(body, "t13") {
			t.Fatalf("the script from %s in tls log: %d %q, want 200 and its JA4", ip, status, body)
		}
		scriptJA4 = body
	}

	// Headless Chromium, with Chrome's User-Agent as a person's override
	// would set it (its own names HeadlessChrome), and headed Chromium.
	seen := tlsStatusOf(t, host).WithFingerprint
	for _, path := range []string{"/", "/private/page"} {
		out, err := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--ignore-certificate-errors",
			"--user-data-dir="+filepath.Join(t.TempDir(), "profile"), "--user-agent="+chromeUA,
			"--host-resolver-rules=MAP "+host+" 127.0.0.1", "--dump-dom", base+path).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "t13") {
			t.Fatalf("headless Chromium at %s: %v\n%s", path, err, out)
		}
	}
	home, err := os.MkdirTemp("", "robots-tlsstatus-")
	if err != nil {
		t.Fatal(err)
	}
	startBrowser(t, launchChromium(t, startXvfb(t), base+"/private/headed", home, ca, ""), home)
	eventually(t, 60*time.Second, "headed Chromium's request", func() bool {
		return tlsStatusOf(t, host).WithFingerprint >= seen+3
	})

	st := tlsStatusOf(t, host)
	if len(st.Logged) != 1 || len(st.Enforced) != 0 {
		t.Fatalf("logged %+v, enforced %+v: want the script alone, in log", st.Logged, st.Enforced)
	}
	e := st.Logged[0]
	if e.JA4 != scriptJA4 || e.Engine != "library" || !slices.Equal(e.Claimed, []string{"Chrome"}) || e.Requests != 5 ||
		!slices.Equal(e.Networks, []string{"127.0.0.1/32", "127.0.0.2/32"}) || e.LastSeen.Before(e.FirstSeen) || !strings.Contains(e.Why, "HTTP library") {
		t.Errorf("the script's entry: %+v, want JA4 %s, library, Chrome, 5 requests from 127.0.0.1 and 127.0.0.2", e, scriptJA4)
	}
	if st.WithFingerprint < 8 || st.WithoutFingerprint != 0 {
		t.Errorf("requests with a fingerprint %d (want at least the script's 5 and the browsers' 3), without %d (want 0)", st.WithFingerprint, st.WithoutFingerprint)
	}

	// Without the wrapper: no fingerprint, nobody judged by it.
	bareCfg := ca.clientTLS(t)
	bareCfg.ServerName = bare
	if status, body := scriptGet(t, bareCfg, "127.0.0.1", altPort, "https://"+hostPort(bare, altPort)+"/private/x"); status != http.StatusOK || strings.HasPrefix(body, "t13") {
		t.Fatalf("the script on the server without the wrapper: %d %q, want 200 and no JA4", status, body)
	}
	if b := tlsStatusOf(t, bare); b.WithFingerprint != 0 || b.WithoutFingerprint != 1 || len(b.Logged)+len(b.Enforced) != 0 {
		t.Errorf("the server without the wrapper: %+v, want 1 request without a fingerprint and nobody listed", b)
	}

	checkTLSStatusPage(t, c, chromium, 1100, []string{scriptJA4, "The tls signal would refuse", "127.0.0.2/32", "the tls signal sees nothing"})

	// Enforce: the same site block, its counts kept.
	c = newClient(t, tlsStatusConfig(ca, host, bare, "tls enforce"))
	if status, body := scriptGet(t, cfg, "127.0.0.1", httpsPort, base+"/private/enforced"); status != http.StatusForbidden || !strings.Contains(body, "signal tls") {
		t.Fatalf("the script in tls enforce: %d\n%s", status, body)
	}
	st = tlsStatusOf(t, host)
	if len(st.Enforced) != 1 || st.Enforced[0].JA4 != scriptJA4 || st.Enforced[0].Requests != 1 || len(st.Logged) != 1 || st.Logged[0].Requests != 5 {
		t.Errorf("after tls enforce: logged %+v, enforced %+v; want the script's 5 logged and 1 enforced", st.Logged, st.Enforced)
	}
	checkTLSStatusPage(t, c, chromium, 412, []string{"Judged by the tls signal", "The tls signal would refuse"})
}

// scriptGet sends a request for url over Go's crypto/tls (a library's
// handshake) from the local address from to 127.0.0.1:port, claiming
// Chrome with every header a browser sends (forgedBrowserHeaders), and
// returns the status and body.
func scriptGet(t *testing.T, cfg *tls.Config, from string, port int, url string) (int, string) {
	t.Helper()
	dialer := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp", hostPort("127.0.0.1", port))
		}}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for _, h := range forgedBrowserHeaders {
		req.Header.Set(h[0], h[1])
	}
	res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// checkTLSStatusPage reads the status page through status.localhost,
// checks that it says each of want, and takes a screenshot of it in
// headless Chromium, width pixels wide (kept at $ROBOTS_TLS_SCREENSHOT,
// the width added to its name, when set, to look at), which must not be
// blank.
func checkTLSStatusPage(t *testing.T, c client, chromium string, width int, want []string) {
	t.Helper()
	res := c.get(siteURL("status.localhost")+"/robots/", chromeUA, "Sec-Fetch-Mode: navigate", "Sec-Fetch-Site: none")
	if res.status != http.StatusOK {
		t.Fatalf("status page: %d %.300s", res.status, res.body)
	}
	for _, w := range want {
		if !strings.Contains(res.body, w) {
			t.Errorf("status page lacks %q", w)
		}
	}
	keep := os.Getenv("ROBOTS_TLS_SCREENSHOT")
	if keep != "" {
		keep = strings.TrimSuffix(keep, ".png") + "-" + strconv.Itoa(width) + ".png"
	}
	img := chromiumtest.Screenshot(t, chromium, siteURL("status.localhost")+"/robots/", width, 2400, keep)
	if colours, _ := chromiumtest.Colours(img, func(r, g, b uint32) bool { return false }); colours < 8 {
		t.Errorf("screenshot looks blank: %d distinct colours", colours)
	}
}
