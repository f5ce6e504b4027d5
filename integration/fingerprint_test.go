package integration

import (
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/agents/ja4"
	"github.com/caddyrobots/caddy-robots/internal/chromiumtest"
)

// The robots_fingerprint listener wrapper through a real Caddy over HTTPS:
// every request on a wrapped connection carries its JA4 in
// {http.robots.tls_fingerprint}, whichever client made it, over HTTP/1.1
// and HTTP/2; without the wrapper the placeholder is unknown.

// ja4Pattern finds a JA4 fingerprint in a response.
var ja4Pattern = regexp.MustCompile(`[tq](13|12|11|10|s3|s2|d1|d2|d3|00)[di][0-9]{4}[0-9A-Za-z]{2}_[0-9a-f]{12}_[0-9a-f]{12}`)

// fingerprintConfig serves https://localhost:httpsPort with the robots
// handler and a response echoing the placeholder, in the body and in a
// deferred header; wrapped says whether robots_fingerprint wraps the
// listener.
func fingerprintConfig(ca testCA, wrapped bool) string {
	servers := "\tservers {\n\t\tprotocols h1 h2\n"
	if wrapped {
		servers += "\t\tlistener_wrappers {\n\t\t\trobots_fingerprint\n\t\t\ttls\n\t\t}\n"
	}
	servers += "\t}\n"
	return globalsWith(servers) + fmt.Sprintf(`
https://localhost:%d {
	tls %s %s
	header >X-TLS-Fingerprint {http.robots.tls_fingerprint}
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		crawl_delay off
		strikes off
	}
	respond "fp={http.robots.tls_fingerprint}"
}
`, httpsPort, ca.certFile, ca.keyFile)
}

// goHelloJA4 is the JA4 that agents/ja4 computes for the ClientHello that
// Go's http.Transport with cfg sends, read from a plain TCP listener.
func goHelloJA4(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		hdr := make([]byte, ja4.RecordHeaderLen)
		if _, err := io.ReadFull(c, hdr); err != nil {
			got <- nil
			return
		}
		rec := make([]byte, ja4.RecordHeaderLen+int(binary.BigEndian.Uint16(hdr[3:])))
		copy(rec, hdr)
		_, err = io.ReadFull(c, rec[ja4.RecordHeaderLen:])
		if err != nil {
			rec = nil
		}
		got <- rec
	}()
	tr := &http.Transport{TLSClientConfig: cfg.Clone(), ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	go func() {
		_, _ = (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://localhost:" + port + "/")
	}()
	rec := <-got
	h, err := ja4.ParseClientHello(rec)
	if err != nil {
		t.Fatalf("Go's ClientHello: %v", err)
	}
	return h.JA4()
}

func TestTLSFingerprintPlaceholder(t *testing.T) {
	ca := newTestCA(t, "localhost", "127.0.0.1")
	newClient(t, fingerprintConfig(ca, true))
	url := fmt.Sprintf("https://localhost:%d/page", httpsPort)
	resolve := fmt.Sprintf("localhost:%d:127.0.0.1", httpsPort)
	found := func(name, body string) string {
		t.Helper()
		m := ja4Pattern.FindString(body)
		if m == "" || !strings.Contains(body, "fp="+m) {
			t.Errorf("%s: no JA4 in the response %q", name, body)
		}
		return m
	}

	// Go's net/http over HTTP/2: two requests on one connection, each with
	// the fingerprint, which is the JA4 of Go's own ClientHello.
	cfg := ca.clientTLS(t)
	tr := &http.Transport{TLSClientConfig: cfg.Clone(), ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	goClient := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	want := goHelloJA4(t, cfg)
	var goJA4 string
	for i := range 2 {
		res, err := goClient.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.ProtoMajor != 2 {
			t.Errorf("Go request %d: %s, want HTTP/2", i, res.Proto)
		}
		goJA4 = found("Go net/http", string(body))
		if goJA4 != want {
			t.Errorf("Go request %d: %s, want %s (agents/ja4 of Go's hello)", i, goJA4, want)
		}
		if h := res.Header.Get("X-TLS-Fingerprint"); h != goJA4 {
			t.Errorf("Go request %d: header >X-TLS-Fingerprint %q, want %q", i, h, goJA4)
		}
	}

	// curl over HTTP/1.1 and HTTP/2 (its ALPN differs, hence the JA4's
	// first part); no GREASE-free library looks like Chromium below.
	curl := need(t, "curl")
	curlRun := func(args ...string) string {
		out, err := exec.Command(curl, append([]string{"-sS", "--cacert", ca.caFile, "--resolve", resolve}, append(args, url)...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	curlH1 := found("curl --http1.1", curlRun("--http1.1"))
	curlH2 := found("curl --http2", curlRun("--http2"))
	if !strings.HasPrefix(curlH1, "t13d") || curlH1[8:10] != "h1" || curlH2[8:10] != "h2" {
		t.Errorf("curl: %s over HTTP/1.1 and %s over HTTP/2, want t13d… with ALPN h1 and h2", curlH1, curlH2)
	}

	// Python's urllib (Debian's python3).
	py := need(t, "/usr/bin/python3")
	out, err := exec.Command(py, "-c", `import ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[2])
print(urllib.request.urlopen(sys.argv[1], context=ctx).read().decode())`, url, ca.caFile).CombinedOutput()
	if err != nil {
		t.Fatalf("python3 urllib: %v\n%s", err, out)
	}
	pyJA4 := found("python3 urllib", string(out))

	// Headless Chromium: BoringSSL's handshake, not any library's.
	chromium := chromiumtest.Find(t)
	dir := t.TempDir()
	out, err = exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--ignore-certificate-errors",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", url).Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	chromeJA4 := found("chromium", string(out))
	if !strings.HasPrefix(chromeJA4, "t13d") {
		t.Errorf("chromium: %s, want t13d…", chromeJA4)
	}
	for name, lib := range map[string]string{"curl": curlH2, "Go": goJA4, "python": pyJA4} {
		if lib == chromeJA4 || lib[11:] == chromeJA4[11:] {
			t.Errorf("%s's fingerprint %s shares Chromium's cipher and extension hashes (%s)", name, lib, chromeJA4)
		}
	}
	t.Logf("JA4: chromium %s, curl %s (h1 %s), Go %s, python urllib %s", chromeJA4, curlH2, curlH1, goJA4, pyJA4)

	// Without the wrapper nothing sets the placeholder: left as written.
	newClient(t, fingerprintConfig(ca, false))
	tr.CloseIdleConnections()
	res, err := goClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "fp={http.robots.tls_fingerprint}" {
		t.Errorf("without robots_fingerprint: %q, want the placeholder left as written", body)
	}
}

// TestMissingFingerprintWrapperWarned: a robots handler with its
// undeclared-crawler checks on, on a server that serves HTTPS without
// robots_fingerprint, says so once the config has started, with the fix,
// in /robots/status; with the wrapper, or with undeclared off, it does not.
func TestMissingFingerprintWrapperWarned(t *testing.T) {
	ca := newTestCA(t, "localhost", "127.0.0.1")
	const want = "without the robots_fingerprint listener wrapper"
	get := func() {
		t.Helper()
		tr := &http.Transport{TLSClientConfig: ca.clientTLS(t)}
		defer tr.CloseIdleConnections()
		// resetRetrier: a connection the reloaded server's old socket took
		// may be reset unread.
		res, err := (&http.Client{Transport: resetRetrier{tr}, Timeout: 20 * time.Second}).Get(fmt.Sprintf("https://localhost:%d/page", httpsPort))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}

	newClient(t, fingerprintConfig(ca, false))
	get()
	eventually(t, 5*time.Second, "the missing wrapper warning", func() bool {
		return hasWarning(configWarnings(t), want) && hasWarning(configWarnings(t), "servers { listener_wrappers { robots_fingerprint tls } }")
	})

	for name, cfg := range map[string]string{
		"with the wrapper": fingerprintConfig(ca, true),
		"undeclared off":   strings.Replace(fingerprintConfig(ca, false), "\t\tstrikes off\n", "\t\tstrikes off\n\t\tundeclared off\n", 1),
	} {
		if !strings.Contains(cfg, "robots_fingerprint") && !strings.Contains(cfg, "undeclared off") {
			t.Fatalf("%s: the config is not what the case says:\n%s", name, cfg)
		}
		newClient(t, cfg)
		get()
		time.Sleep(300 * time.Millisecond)
		if ws := configWarnings(t); hasWarning(ws, want) {
			t.Errorf("%s: warned %v", name, ws)
		}
	}
}

// TestTLSEngineOfRealClients: through a real Caddy over HTTPS with
// robots_fingerprint, {http.robots.tls_engine} is the engine each real
// program's handshake comes from, as ja4.Classify tells it: every HTTP
// library here is "library", whatever User-Agent it sends (each sends
// Chrome's), headless Chromium is "chromium", and headless Firefox ESR,
// with and without a Chrome User-Agent override, is "firefox". The
// fields come from the access log, as an operator would add them:
//
//	log_append tls_fingerprint {http.robots.tls_fingerprint}
//	log_append tls_engine {http.robots.tls_engine}
func TestTLSEngineOfRealClients(t *testing.T) {
	ca := newTestCA(t, "localhost", "127.0.0.1")
	logFile := filepath.Join(t.TempDir(), "access.log")
	newClient(t, globalsWith("\tservers {\n\t\tprotocols h1 h2\n\t\tlistener_wrappers {\n\t\t\trobots_fingerprint\n\t\t\ttls\n\t\t}\n\t}\n")+fmt.Sprintf(`
https://localhost:%d {
	tls %s %s
	log {
		output file %s
		format json
	}
	log_append tls_fingerprint {http.robots.tls_fingerprint}
	log_append tls_engine {http.robots.tls_engine}
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		crawl_delay off
		strikes off
		undeclared off
	}
	respond "ok"
}
`, httpsPort, ca.certFile, ca.keyFile, logFile))
	base := fmt.Sprintf("https://localhost:%d/c/", httpsPort)
	resolve := fmt.Sprintf("localhost:%d:127.0.0.1", httpsPort)
	run := func(name string, cmd *exec.Cmd) {
		t.Helper()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
	want := map[string]string{}
	lib := func(name string, cmd *exec.Cmd) {
		want[name] = "library"
		run(name, cmd)
	}

	lib("curl", exec.Command(need(t, "curl"), "-sS", "-o", "/dev/null", "--cacert", ca.caFile, "--resolve", resolve, "-A", chromeUA, base+"curl"))
	lib("wget2", exec.Command(need(t, "wget2"), "-q", "-O", "/dev/null", "--tries=1", "--ca-certificate="+ca.caFile, "-U", chromeUA, base+"wget2"))
	py := need(t, "python3")
	lib("python-urllib", exec.Command(py, "-c", `import ssl, sys, urllib.request
req = urllib.request.Request(sys.argv[1], headers={"User-Agent": sys.argv[3], "Sec-Fetch-Site": "none"})
urllib.request.urlopen(req, context=ssl.create_default_context(cafile=sys.argv[2])).read()`, base+"python-urllib", ca.caFile, chromeUA))
	lib("python-requests", exec.Command(py, "-c", `import sys, requests
requests.get(sys.argv[1], verify=sys.argv[2], headers={"User-Agent": sys.argv[3], "Sec-Fetch-Site": "none"})`, base+"python-requests", ca.caFile, chromeUA))
	node := exec.Command(need(t, "node"), "-e", `fetch(process.argv[1], {headers: {"User-Agent": process.argv[2], "Sec-Fetch-Site": "none"}}).then(r => r.text()).catch(e => { console.error(e); process.exit(1) })`, base+"node-fetch", chromeUA)
	node.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+ca.caFile)
	lib("node-fetch", node)
	tr := &http.Transport{TLSClientConfig: ca.clientTLS(t), ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, base+"go", nil)
	req.Header.Set("User-Agent", chromeUA)
	want["go"] = "library"
	if res, err := (&http.Client{Transport: resetRetrier{tr}, Timeout: 20 * time.Second}).Do(req); err != nil {
		t.Errorf("go: %v", err)
	} else {
		res.Body.Close()
	}

	dir := t.TempDir()
	want["chromium"] = "chromium"
	run("chromium", exec.Command(chromiumtest.Find(t), "--headless", "--no-sandbox", "--disable-gpu", "--ignore-certificate-errors",
		"--user-data-dir="+filepath.Join(dir, "chromium"), "--dump-dom", base+"chromium"))
	firefox := need(t, "firefox-esr")
	for name, ua := range map[string]string{"firefox": "", "firefox-as-chrome": chromeUA} {
		profile := filepath.Join(dir, name)
		trustCA(t, profile, ca)
		if ua != "" {
			if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(`user_pref("general.useragent.override", "`+ua+`");`+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		want[name] = "firefox"
		cmd := exec.Command(firefox, "--headless", "--no-remote", "--profile", profile, "--screenshot", filepath.Join(dir, name+".png"), base+name)
		cmd.Env = append(os.Environ(), "HOME="+dir, "MOZ_CRASHREPORTER_DISABLE=1")
		run(name, cmd)
	}

	// Every client's first request, from the access log.
	got := firstEngines(t, logFile, want)
	for name, engine := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: no request in the access log", name)
			continue
		}
		if g[0] != engine || !ja4Pattern.MatchString(g[1]) {
			t.Errorf("%s: engine %q, fingerprint %q; want %s and a JA4", name, g[0], g[1], engine)
		}
	}
	t.Logf("engines and fingerprints: %v", got)
}

// firstEngines reads each named client's first request from the JSON
// access log (the client's name is its request's last path segment): its
// {http.robots.tls_engine} and {http.robots.tls_fingerprint}, once every
// client in want has one.
func firstEngines(t *testing.T, logFile string, want map[string]string) map[string][2]string {
	t.Helper()
	got := map[string][2]string{}
	eventually(t, 10*time.Second, "an access log line per client", func() bool {
		b, _ := os.ReadFile(logFile)
		for _, line := range strings.Split(string(b), "\n") {
			var entry struct {
				Request struct {
					URI     string              `json:"uri"`
					Headers map[string][]string `json:"headers"`
				} `json:"request"`
				Engine      string `json:"tls_engine"`
				Fingerprint string `json:"tls_fingerprint"`
			}
			if json.Unmarshal([]byte(line), &entry) != nil {
				continue
			}
			name := strings.TrimPrefix(entry.Request.URI, "/c/")
			if _, ok := want[name]; ok {
				if _, seen := got[name]; !seen {
					got[name] = [2]string{entry.Engine, entry.Fingerprint}
				}
			}
		}
		return len(got) == len(want)
	})
	return got
}
