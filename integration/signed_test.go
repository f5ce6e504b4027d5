package integration

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/agents/webbotauth"
)

// keyDirectory serves a Web Bot Auth key directory on loopback.
func keyDirectory(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestSignedAgents: a request signed per Web Bot Auth is judged as the
// signing agent whatever its User-Agent (a browser's here); a signature
// that fails is refused as spoofed; a directory that cannot be read proves
// nothing, so the request is judged by its User-Agent.
func TestSignedAgents(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	dirJSON, err := webbotauth.DirectoryJSON(pub)
	if err != nil {
		t.Fatal(err)
	}
	good := keyDirectory(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", webbotauth.DirectoryMediaType)
		_, _ = w.Write(dirJSON)
	})
	redirecting := keyDirectory(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, good+r.URL.Path, http.StatusFound)
	})
	slow := keyDirectory(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(3 * time.Second)
		_, _ = w.Write(dirJSON)
	})
	dir := advSite(t, "User-agent: SignedBot\nDisallow: /nosigned/\n\nUser-agent: *\nDisallow: /private/\n")
	c := newClient(t, globals+`
`+siteURL("signed.localhost")+` {
	root * `+dir+`
	robots {
		crawl_delay off
		strikes off
		verify {
			signature_agent `+good+` token SignedBot
			signature_agent `+redirecting+` token SignedBot
			signature_agent `+slow+` token SignedBot
		}
	}
	file_server
}
`)
	send := func(path string, opts webbotauth.SignOptions, host string) response {
		t.Helper()
		req, _ := http.NewRequest("GET", siteURL("signed.localhost")+path, nil)
		req.Header.Set("User-Agent", chromeUA)
		if host != "" {
			req.Host = host
		}
		if opts.Key != nil {
			if err := webbotauth.Sign(req, opts); err != nil {
				t.Fatal(err)
			}
		}
		req.Host = at("signed.localhost")
		res, err := c.tc.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return response{status: res.StatusCode, body: string(body), header: res.Header}
	}
	valid := webbotauth.SignOptions{Key: priv, Agent: good}
	now := time.Now()
	cases := []struct {
		name   string
		path   string
		opts   webbotauth.SignOptions
		host   string
		status int
		body   string
	}{
		{"unsigned browser", "/nosigned/x", webbotauth.SignOptions{}, "", 404, ""},
		{"valid: judged by its token's group", "/nosigned/x", valid, "", 403, "Disallow: /nosigned/"},
		{"valid: not by \"*\"", "/private/secret.html", valid, "", 200, secret},
		{"expired", "/index.html", webbotauth.SignOptions{Key: priv, Agent: good, Created: now.Add(-2 * time.Hour), Expires: now.Add(-time.Hour)}, "", 403, "does not verify"},
		{"not yet valid", "/index.html", webbotauth.SignOptions{Key: priv, Agent: good, Created: now.Add(time.Hour), Expires: now.Add(2 * time.Hour)}, "", 403, "does not verify"},
		{"wrong key", "/index.html", webbotauth.SignOptions{Key: otherPriv, Agent: good}, "", 403, "does not verify"},
		{"covered component missing", "/index.html", webbotauth.SignOptions{Key: priv, Agent: good, Components: []string{"@method", "@path", "signature-agent"}}, "", 403, "does not verify"},
		{"tampered authority", "/index.html", valid, at("other.localhost"), 403, "does not verify"},
		{"wrong tag: unsigned, judged as a browser", "/nosigned/x", webbotauth.SignOptions{Key: priv, Agent: good, Tag: "something-else"}, "", 404, ""},
		{"directory redirects: unknown, judged as a browser", "/nosigned/x", webbotauth.SignOptions{Key: priv, Agent: redirecting}, "", 404, ""},
		{"slow directory: unknown, judged as a browser", "/nosigned/x", webbotauth.SignOptions{Key: priv, Agent: slow}, "", 404, ""},
	}
	for _, tc := range cases {
		start := time.Now()
		res := send(tc.path, tc.opts, tc.host)
		if res.status != tc.status || !strings.Contains(res.body, tc.body) {
			t.Errorf("%s: %d %q, want %d containing %q", tc.name, res.status, res.body, tc.status, tc.body)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: took %s", tc.name, took)
		}
	}
	// The verified signer's decisions carry its purpose and name.
	_ = fmt.Sprint()
}
