package integration

// The adversarial suite, third round: what robots.txt governs (the URL the
// crawler sent, every form a server derives from it, headers that rewrite
// it), and who chooses what this server fetches. Each test failed on the
// code before its fix.

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	caddyrobots "github.com/caddyrobots/caddy-robots"
	"github.com/caddyrobots/caddy-robots/agents/webbotauth"
	"github.com/caddyserver/caddy/v2/caddytest"
)

// referenceBackend is an app that reads the request target as a URL
// reference, as Node's new URL(req.url, base) and Python's urlparse do:
// "//anything/private/x" is host "anything", path "/private/x". It also
// honours the rewrite headers IIS, Symfony and Spring honour:
// X-Original-URL and X-Rewrite-URL replace the path, X-Forwarded-Prefix is
// prepended. It serves the secret for /private/ and robots.txt for
// /robots.txt.
type referenceBackend struct {
	addr   string
	robots string
	hits   atomic.Int64
}

func startReferenceBackend(t *testing.T, robots string) *referenceBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &referenceBackend{addr: ln.Addr().String(), robots: robots}
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return b
}

func (b *referenceBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.hits.Add(1)
	target := r.RequestURI
	for _, h := range []string{"X-Original-Url", "X-Rewrite-Url"} {
		if v := r.Header.Get(h); v != "" {
			target = v
		}
	}
	if p := r.Header.Get("X-Forwarded-Prefix"); p != "" {
		target = strings.TrimRight(p, "/") + target
	}
	base, _ := url.Parse("http://app.internal/")
	u, err := base.Parse(target)
	p := "/"
	if err == nil {
		p = path.Clean("/" + u.Path)
	}
	switch {
	case p == "/robots.txt":
		_, _ = io.WriteString(w, b.robots)
	case strings.HasPrefix(p, "/private/"):
		_, _ = io.WriteString(w, secret)
	default:
		_, _ = io.WriteString(w, "app:"+p)
	}
}

// TestAdversarialURLReference: a backend that reads the target as a URL
// reference serves /private/x for "//anything/private/x": the handler
// judges the form with the leading "//authority" removed too.
func TestAdversarialURLReference(t *testing.T) {
	b := startReferenceBackend(t, "User-agent: *\nDisallow: /private/\n")
	newClient(t, globals+`
`+siteURL("urlref.localhost")+` {
	robots {
		strikes off
		crawl_delay off
	}
	reverse_proxy `+b.addr+`
}
`)
	for _, target := range []string{"//anything/private/x", "///x/private/x", "//x/private/x?q=1", "//x%2Fprivate/x", "/\\x/private/x"} {
		status, body := rawGet(t, httpAddr(), "GET", target, at("urlref.localhost"), "User-Agent: "+exampleUA)
		if status != 403 || strings.Contains(body, secret) {
			t.Errorf("GET %s as a crawler: %d %q, want 403", target, status, body)
		}
	}
	// A person is not judged, and a crawler's allowed path is served.
	if status, _ := rawGet(t, httpAddr(), "GET", "//anything/public/x", at("urlref.localhost"), "User-Agent: "+exampleUA); status != 200 {
		t.Errorf("allowed path through a URL reference: %d", status)
	}
}

// TestAdversarialRewriteHeaders: headers a backend honours as the target
// are judged as forms of it; on /robots.txt (always served, even to banned
// bots) they are removed before the backend sees them.
func TestAdversarialRewriteHeaders(t *testing.T) {
	b := startReferenceBackend(t, "User-agent: *\nDisallow: /private/\n")
	c := newClient(t, globals+`
`+siteURL("rewritehdr.localhost")+` {
	robots {
		strikes 3 10m 1h
		crawl_delay off
	}
	reverse_proxy `+b.addr+`
}
`)
	u := siteURL("rewritehdr.localhost")
	for _, h := range []string{"X-Original-URL: /private/x", "X-Rewrite-URL: /private/x", "X-Forwarded-Prefix: /private"} {
		res := c.get(u+"/public/", exampleUA, h)
		if res.status != 403 || strings.Contains(res.body, secret) || !strings.Contains(res.body, "rewrite header") {
			t.Errorf("GET /public/ with %s: %d %q, want 403 naming the header", h, res.status, res.body)
		}
	}
	// /robots.txt with a rewrite header is still robots.txt, for a banned
	// bot too (the three refusals above were strikes).
	if res := c.get(u+"/public/", exampleUA); res.status != 403 || !strings.Contains(res.body, "banned") {
		t.Fatalf("the bot is not banned: %d %q", res.status, res.body)
	}
	for _, who := range []string{exampleUA, chromeUA} {
		res := c.get(u+"/robots.txt", who, "X-Original-URL: /private/x")
		if res.status != 200 || strings.Contains(res.body, secret) || !strings.Contains(res.body, "Disallow: /private/") {
			t.Errorf("GET /robots.txt with X-Original-URL as %q: %d %q, want the robots.txt", who, res.status, res.body)
		}
	}
}

// TestAdversarialPreferenceForms: an AI usage preference is judged on
// every form of the target, as Allow and Disallow are: an AI-training
// crawler cannot read /articles/ as /./articles/ or /articles%2F.
func TestAdversarialPreferenceForms(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"robots.txt":      "User-agent: *\nContent-Usage: /articles/ train-ai=n\nAllow: /\n",
		"articles/a.html": secret,
		"public/a.html":   "public",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	newClient(t, globals+`
`+siteURL("prefforms.localhost")+` {
	root * `+dir+`
	robots {
		preferences enforce
		crawl_delay off
	}
	file_server
}
`)
	for _, target := range []string{"/articles/a.html", "/./articles/a.html", "/public/../articles/a.html", "/articles%2Fa.html", "//articles/a.html"} {
		status, body := rawGet(t, httpAddr(), "GET", target, at("prefforms.localhost"), "User-Agent: "+gptbotUA)
		if status != 403 || strings.Contains(body, secret) || !strings.Contains(body, "train-ai") {
			t.Errorf("GPTBot GET %s: %d %q, want 403 by the preference", target, status, body)
		}
	}
	if status, _ := rawGet(t, httpAddr(), "GET", "/public/a.html", at("prefforms.localhost"), "User-Agent: "+gptbotUA); status != 200 {
		t.Errorf("GPTBot on a path without a preference: %d", status)
	}
}

// TestAdversarialHandlePathStrike: inside handle_path /docs/*, the
// operator's own rewrite is not the crawler's request. A crawler that asks
// for /docs/search/ (robots.txt: Disallow: /search) asked for an allowed
// URL: it is served, never struck, never banned.
func TestAdversarialHandlePathStrike(t *testing.T) {
	b := startReferenceBackend(t, "User-agent: *\nDisallow: /search\n")
	c := newClient(t, globals+`
`+siteURL("docs.localhost")+` {
	handle_path /docs/* {
		robots {
			strikes 3 10m 1h
			crawl_delay off
		}
		respond "docs {path}"
	}
	handle {
		robots {
			strikes 3 10m 1h
			crawl_delay off
		}
		reverse_proxy `+b.addr+`
	}
}
`)
	u := siteURL("docs.localhost")
	for i := range 12 {
		c.expect(fmt.Sprintf("%s/docs/search/?q=%d", u, i), exampleUA, 200, "docs /search/")
	}
	c.expect(u+"/docs/index.html", exampleUA, 200, "docs /index.html")
	// The site's own /search is disallowed, as its robots.txt says.
	c.expect(u+"/search/", exampleUA, 403, "Disallow: /search")
}

// TestAdversarialSignatureAgentURL: with signature_agent configured, a
// request whose Signature-Agent names another URL of the agent's origin
// (an internal admin endpoint, a new query each time) made Caddy GET that
// URL, and became an identity of its own that escaped the configured
// token's group. Now the configured directory is the only one fetched, such
// a request is refused as spoofed without a fetch, and the identity is the
// configured agent.
func TestAdversarialSignatureAgentURL(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	dirJSON, err := webbotauth.DirectoryJSON(pub)
	if err != nil {
		t.Fatal(err)
	}
	var other atomic.Int64
	agent := keyDirectory(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != webbotauth.WellKnownPath {
			other.Add(1)
		}
		w.Header().Set("Content-Type", webbotauth.DirectoryMediaType)
		_, _ = w.Write(dirJSON)
	})
	dir := advSite(t, "User-agent: MyAgent\nDisallow: /\n")
	c := newClient(t, globals+`
`+siteURL("sigurl.localhost")+` {
	root * `+dir+`
	robots {
		crawl_delay off
		verify {
			signature_agent `+agent+` token MyAgent
		}
	}
	file_server
}
`)
	send := func(agentURL string) response {
		t.Helper()
		req, _ := http.NewRequest("GET", siteURL("sigurl.localhost")+"/public/", nil)
		req.Header.Set("User-Agent", chromeUA)
		req.Host = at("sigurl.localhost")
		if err := webbotauth.Sign(req, webbotauth.SignOptions{Key: priv, Agent: agentURL}); err != nil {
			t.Fatal(err)
		}
		res, err := c.tc.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return response{status: res.StatusCode, body: string(body)}
	}
	for i := range 3 {
		res := send(fmt.Sprintf("%s/internal/admin/purge?confirm=yes&id=%d", agent, i))
		if res.status != 403 || !strings.Contains(res.body, "does not verify") {
			t.Errorf("Signature-Agent naming another URL: %d %q, want 403 as spoofed", res.status, res.body)
		}
	}
	if n := other.Load(); n != 0 {
		t.Errorf("Caddy fetched %d URLs the requests chose", n)
	}
	// The configured agent is judged by its token's group: Disallow: /.
	if res := send(agent); res.status != 403 || !strings.Contains(res.body, "Disallow: /") {
		t.Errorf("the configured agent: %d %q, want 403 by MyAgent's group", res.status, res.body)
	}
}

// TestAdversarialIPListCoverage: an IP list of 256 /8 prefixes (all of
// IPv4) was accepted and then verified a GPTBot claim from 8.8.8.8. A list
// may cover at most a /8 in all (no crawler operator publishes a twentieth
// of that): a file that covers more fails the config load, a download is
// rejected and the last good list kept.
func TestAdversarialIPListCoverage(t *testing.T) {
	t.Setenv(caddyrobots.RangesOperatorsEnv, "off")
	var all strings.Builder
	for i := 1; i < 256; i++ {
		fmt.Fprintf(&all, "%d.0.0.0/8\n", i)
	}
	file := filepath.Join(t.TempDir(), "everyone.txt")
	if err := os.WriteFile(file, []byte(all.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	caddytest.AssertLoadError(t, globals+siteURL("coverage.localhost")+` {
	robots {
		verify {
			ranges openai-gptbot `+file+`
		}
	}
	respond "ok"
}
`, "caddyfile", "more than any crawler operator publishes")

	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, all.String())
	}))
	defer srv.Close()
	cfg := globalsWith("\tservers {\n\t\ttrusted_proxies static 127.0.0.1/32\n\t}\n")
	c := newClient(t, cfg+siteURL("coverage.localhost")+` {
	robots {
		source inline "User-agent: GPTBot\nAllow: /\n\nUser-agent: *\nDisallow: /\n"
		strikes off
		verify {
			ranges openai-gptbot `+srv.URL+`/all.txt
			ranges_refresh 1s
		}
	}
	respond "ok"
}
`)
	eventually(t, 10*time.Second, "the list to be downloaded twice", func() bool { return hits.Load() >= 2 })
	// 8.8.8.8 is not OpenAI's: the claim stays unverified, judged by "*"
	// as well as its own group, so the "*" group's Disallow: / answers
	// 503 (never 200 as a verified GPTBot).
	res := c.get(siteURL("coverage.localhost")+"/page", gptbotUA, "X-Forwarded-For: 8.8.8.8")
	if res.status == 200 {
		t.Errorf("a GPTBot claim from 8.8.8.8 was verified by a list of all IPv4: %d %q", res.status, res.body)
	}
}

// TestAdversarialSiteNamedBrowserString: a client that dresses as Chrome
// but carries a word the site's own robots.txt names as a group is that
// group's bot: "User-agent: MyAgent / Disallow: /" refuses it everywhere,
// through the server and in the admin API's check, while a real Chrome
// string (and a group for "Mozilla" or "Chrome") turns no browser into a
// bot. Before the fix it passed as a person.
func TestAdversarialSiteNamedBrowserString(t *testing.T) {
	const robots = "User-agent: *\nDisallow: /private/\n\nUser-agent: MyAgent\nDisallow: /\n\nUser-agent: Mozilla\nUser-agent: Chrome\nDisallow: /\n"
	backend.set("named.localhost", 200, robots)
	c := newClient(t, globals+siteURL("named.localhost")+` {
	robots {
		crawl_delay off
	}
	reverse_proxy `+backend.addr+`
}
`)
	settle(c, siteURL("named.localhost")+"/")
	// A bot's request loads the site's robots.txt (a person's never waits
	// for it).
	c.expect(siteURL("named.localhost")+"/public", exampleUA, 200)

	const disguised = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; MyAgent/2.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	c.expect(siteURL("named.localhost")+"/public", disguised, 403, "User-agent: MyAgent", "Disallow: /")
	c.expect(siteURL("named.localhost")+"/robots.txt", disguised, 200, "User-agent: MyAgent")
	// The same word in another case, after the browser's products.
	c.expect(siteURL("named.localhost")+"/public", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 myagent", 403, "User-agent: MyAgent")
	// A substring is not a name.
	c.expect(siteURL("named.localhost")+"/public", "Mozilla/5.0 (Windows NT 10.0; Win64; x64; MyAgentX/2.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", 200)
	// People: the groups for Mozilla and Chrome name no browser.
	c.expect(siteURL("named.localhost")+"/public", chromeUA, 200)
	c.expect(siteURL("named.localhost")+"/private/x", chromeUA, 200)

	var res adminCheck
	adminJSON(t, http.MethodPost, "/robots/check", map[string]string{"user_agent": disguised, "ip": "127.0.0.1", "url": siteURL("named.localhost") + "/public"}, http.StatusOK, &res)
	if res.Decision != "block" || res.Crawler != "MyAgent" || !strings.Contains(res.Group, "User-agent: MyAgent") {
		t.Errorf("admin check of the disguised string: %+v", res)
	}
	adminJSON(t, http.MethodPost, "/robots/check", map[string]string{"user_agent": chromeUA, "ip": "127.0.0.1", "url": siteURL("named.localhost") + "/public"}, http.StatusOK, &res)
	if res.Decision != "allow" || res.Reason != "not a crawler" {
		t.Errorf("admin check of Chrome: %+v", res)
	}
}

// TestAdversarialCaseInsensitiveBackend: an IIS-like backend serves
// /PRIVATE/x as /private/x. With case_insensitive_paths, every spelling of
// a disallowed path is refused (capitals, escaped letters), rules written
// with capitals govern lower-case targets, and /robots.txt is served as
// written. Without the option the capitalised spelling gets the secret,
// which is what the option is for.
func TestAdversarialCaseInsensitiveBackend(t *testing.T) {
	const robots = "User-agent: *\nDisallow: /Private/\nAllow: /Private/Press/\n"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := strings.ToLower(r.URL.Path) // the file system ignores case
		switch {
		case p == "/robots.txt":
			_, _ = io.WriteString(w, robots)
		case strings.HasPrefix(p, "/private/"):
			_, _ = io.WriteString(w, "secret:"+p)
		default:
			_, _ = io.WriteString(w, "page:"+p)
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	c := newClient(t, globals+siteURL("iis.localhost")+` {
	robots {
		crawl_delay off
		case_insensitive_paths
	}
	reverse_proxy `+ln.Addr().String()+`
}
`+siteURL("cs.localhost")+` {
	robots {
		crawl_delay off
	}
	reverse_proxy `+ln.Addr().String()+`
}
`)
	settle(c, siteURL("iis.localhost")+"/")
	const bot = "CaseBot/1.0 (+https://case.example/bot)"
	for _, p := range []string{"/private/x", "/PRIVATE/x", "/Private/x", "/%50rivate/x", "/pRiVaTe/%58"} {
		c.expect(siteURL("iis.localhost")+p, bot, 403, "Disallow: /private/")
	}
	c.expect(siteURL("iis.localhost")+"/PRIVATE/press/a", bot, 200, "secret:/private/press/a")
	c.expect(siteURL("iis.localhost")+"/Public", bot, 200, "page:/public")
	c.expect(siteURL("iis.localhost")+"/robots.txt", bot, 200, "Disallow: /Private/")
	var res adminCheck
	adminJSON(t, http.MethodPost, "/robots/check", map[string]string{"user_agent": bot, "ip": "127.0.0.1", "url": siteURL("iis.localhost") + "/PRIVATE/y"}, http.StatusOK, &res)
	if res.Decision != "block" || res.Line != 2 {
		t.Errorf("admin check of /PRIVATE/y: %+v", res)
	}
	// Without the option, RFC 9309's case-sensitive comparison: the rule
	// written /Private/ does not cover /private/ or /PRIVATE/.
	c.expect(siteURL("cs.localhost")+"/Private/x", bot, 403, "Disallow: /Private/")
	c.expect(siteURL("cs.localhost")+"/PRIVATE/x", bot, 200, "secret:/private/x")
}
