package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tls signal through a real Caddy over HTTPS with robots_fingerprint:
// HTTP libraries that forge every header a browser sends are told by their
// handshake.

// forgedBrowserHeaders are the headers Chrome sends on a typed navigation,
// which a script that knows the header signals forges.
var forgedBrowserHeaders = [][2]string{
	{"User-Agent", chromeUA},
	{"Sec-Fetch-Site", "none"},
	{"Sec-Fetch-Mode", "navigate"},
	{"Sec-Fetch-Dest", "document"},
	{"Sec-Fetch-User", "?1"},
	{"Sec-CH-UA", `"Chromium";v="131", "Google Chrome";v="131", "Not_A Brand";v="24"`},
	{"Sec-CH-UA-Mobile", "?0"},
	{"Sec-CH-UA-Platform", `"Windows"`},
}

// tlsSignalConfig serves https://localhost:httpsPort (wrapped by
// robots_fingerprint) and http://localhost:httpPort with robots.txt
// disallowing /private/ for everyone; signals is the undeclared_signals
// block of undeclared ("" for the defaults).
func tlsSignalConfig(ca testCA, signals string) string {
	robots := "\trobots {\n\t\tsource inline \"User-agent: *\\nDisallow: /private/\\n\"\n\t\tcrawl_delay off\n\t\tstrikes off\n"
	if signals != "" {
		robots += "\t\tundeclared {\n\t\t\t" + signals + "\n\t\t}\n"
	}
	robots += "\t}\n\trespond \"ok\"\n"
	return globalsWith("\tservers {\n\t\tprotocols h1 h2\n\t\tlistener_wrappers {\n\t\t\trobots_fingerprint\n\t\t\ttls\n\t\t}\n\t}\n") +
		fmt.Sprintf("https://localhost:%d {\n\ttls %s %s\n%s}\n\nhttp://localhost:%d {\n%s}\n",
			httpsPort, ca.certFile, ca.keyFile, robots, httpPort, robots)
}

// libraryStatuses fetches url with each HTTP library installed here, each
// sending Chrome's User-Agent and forged Fetch Metadata and client hints,
// and returns the status each got; for Go's net/http, the body too.
func libraryStatuses(t *testing.T, ca testCA, url string) (map[string]int, string) {
	t.Helper()
	got := map[string]int{}
	run := func(name string, cmd *exec.Cmd) {
		t.Helper()
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("%s: %v\n%s\n%s", name, err, out, stderr)
		}
		fields := strings.Fields(string(out))
		if len(fields) == 0 {
			t.Fatalf("%s: no status in %q", name, out)
		}
		code, err := strconv.Atoi(fields[len(fields)-1])
		if err != nil {
			t.Fatalf("%s: no status in %q", name, out)
		}
		got[name] = code
	}
	curlArgs := []string{"-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", ca.caFile,
		"--resolve", fmt.Sprintf("localhost:%d:127.0.0.1", httpsPort), "--resolve", fmt.Sprintf("localhost:%d:127.0.0.1", httpPort)}
	pyHeaders := "{"
	for _, h := range forgedBrowserHeaders {
		curlArgs = append(curlArgs, "-H", h[0]+": "+h[1])
		pyHeaders += strconv.Quote(h[0]) + ": " + strconv.Quote(h[1]) + ", "
	}
	pyHeaders += "}"
	run("curl", exec.Command(need(t, "curl"), append(curlArgs, url)...))
	py := need(t, "python3")
	run("python-urllib", exec.Command(py, "-c", `import ssl, sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1], headers=`+pyHeaders+`)
try:
    print(urllib.request.urlopen(req, context=ssl.create_default_context(cafile=sys.argv[2])).status)
except urllib.error.HTTPError as e:
    print(e.code)`, url, ca.caFile))
	run("python-requests", exec.Command(py, "-c", `import sys, requests
print(requests.get(sys.argv[1], verify=sys.argv[2], headers=`+pyHeaders+`).status_code)`, url, ca.caFile))
	nodeHeaders := strings.ReplaceAll(strings.ReplaceAll(pyHeaders, "{", "({"), "}", "})")
	node := exec.Command(need(t, "node"), "-e", `fetch(process.argv[1], {headers: `+nodeHeaders+`}).then(r => console.log(r.status)).catch(e => { console.error(e); process.exit(1) })`, url)
	node.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+ca.caFile)
	run("node-fetch", node)
	spider := filepath.Join(t.TempDir(), "spider.py")
	if err := os.WriteFile(spider, []byte(`import scrapy

class One(scrapy.Spider):
    name = "one"
    custom_settings = {"ROBOTSTXT_OBEY": False, "HTTPERROR_ALLOW_ALL": True, "LOG_LEVEL": "ERROR", "RETRY_ENABLED": False,
                       "DEFAULT_REQUEST_HEADERS": `+pyHeaders+`, "USER_AGENT": `+strconv.Quote(chromeUA)+`}
    def start_requests(self):
        yield scrapy.Request(self.url, dont_filter=True)
    def parse(self, response):
        print(response.status)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	run("scrapy", exec.Command(need(t, "scrapy"), "runspider", "--nolog", spider, "-a", "url="+url))

	tr := &http.Transport{TLSClientConfig: ca.clientTLS(t), ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for _, h := range forgedBrowserHeaders {
		req.Header.Set(h[0], h[1])
	}
	res, err := (&http.Client{Transport: resetRetrier{tr}, Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("go: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	got["go"] = res.StatusCode
	return got, string(body)
}

// TestTLSSignalLibraries: with `undeclared { tls enforce }`, curl,
// Python's urllib and requests, Node's fetch, Scrapy and Go's net/http,
// each claiming Chrome with forged Fetch Metadata and client hints, get 403
// on a path robots.txt disallows, with a refusal that names the signal and
// the handshake's fact, and 200 on a path it allows (they are judged by
// the "*" group, not banned). A bare Mozilla/5.0 and MSIE 8 over TLS 1.3
// are refused as claims the handshake makes impossible. Over plain HTTP, with no handshake, the same
// requests are not judged by it. With the default (tls log) they are
// served, and counted under signal="tls", mode="log".
func TestTLSSignalLibraries(t *testing.T) {
	ca := newTestCA(t, "localhost", "127.0.0.1")
	secure := fmt.Sprintf("https://localhost:%d", httpsPort)
	plain := fmt.Sprintf("http://localhost:%d", httpPort)

	newClient(t, tlsSignalConfig(ca, "tls enforce"))
	got, body := libraryStatuses(t, ca, secure+"/private/page")
	for name, code := range got {
		if code != http.StatusForbidden {
			t.Errorf("%s over HTTPS, tls enforce: status %d, want 403", name, code)
		}
	}
	if len(got) != 6 {
		t.Errorf("clients run: %v", got)
	}
	for _, want := range []string{"signal tls", "TLS handshake is an HTTP library's", "Disallow: /private/"} {
		if !strings.Contains(body, want) {
			t.Errorf("refusal does not say %q:\n%s", want, body)
		}
	}
	// Claims no handshake of a library could honestly go with: a bare
	// Mozilla/5.0, and an Internet Explorer that never offered TLS 1.3.
	cfg := ca.clientTLS(t)
	cfg.ServerName = "localhost"
	for _, ua := range []string{"Mozilla/5.0 (Windows NT 10.0; Win64; x64)", "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; Trident/4.0)"} {
		status, body := forgedGet(t, cfg, "", secure+"/private/page", ua)
		if status != http.StatusForbidden || !strings.Contains(body, "could not have made this request's TLS handshake") {
			t.Errorf("Go claiming %q: %d\n%s", ua, status, body)
		}
	}
	got, _ = libraryStatuses(t, ca, secure+"/public")
	for name, code := range got {
		if code != http.StatusOK {
			t.Errorf("%s over HTTPS on an allowed path: status %d, want 200", name, code)
		}
	}
	got, _ = libraryStatuses(t, ca, plain+"/private/page")
	for name, code := range got {
		if code != http.StatusOK {
			t.Errorf("%s over plain HTTP (no fingerprint), tls enforce: status %d, want 200", name, code)
		}
	}

	newClient(t, tlsSignalConfig(ca, ""))
	before := undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="tls",mode="log"`)
	got, _ = libraryStatuses(t, ca, secure+"/private/page")
	for name, code := range got {
		if code != http.StatusOK {
			t.Errorf("%s over HTTPS, tls log (the default): status %d, want 200", name, code)
		}
	}
	if n := undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="tls",mode="log"`) - before; n < float64(len(got)) {
		t.Errorf("caddy_robots_undeclared_total{signal=\"tls\",mode=\"log\"} grew by %v, want at least %d", n, len(got))
	}
}
