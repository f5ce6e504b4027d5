package integration

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
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

// digestConfig is the Caddyfile of TestSignedContentDigest: a site and a
// handle_path under another, each verifying the signatures of the agent
// whose key directory is at good, in front of the backend at backendURL.
func digestConfig(good, backendURL string) string {
	return globals + `
` + siteURL("digest.localhost") + ` {
	robots {
		source inline "User-agent: SignedBot\nDisallow: /nosigned/\n\nUser-agent: *\nDisallow: /private/\n"
		crawl_delay off
		strikes off
		verify {
			signature_agent ` + good + ` token SignedBot
		}
	}
	reverse_proxy ` + strings.TrimPrefix(backendURL, "http://") + `
}
` + siteURL("digestpath.localhost") + ` {
	handle_path /api/* {
		robots {
			source inline "User-agent: SignedBot\nDisallow: /nosigned/\n\nUser-agent: *\nDisallow: /private/\n"
			crawl_delay off
			strikes off
			verify {
				signature_agent ` + good + ` token SignedBot
			}
		}
		reverse_proxy ` + strings.TrimPrefix(backendURL, "http://") + `
	}
}
`
}

// TestSignedContentDigest: a signature that covers Content-Digest proves
// the body too. The signed request with its own body is the agent's (judged
// by its group: /private/ is allowed to it) and the backend gets the body
// whole; the same captured signature replayed with another body is refused
// as a signature that does not verify, and reaches no backend; a body over
// the 1 MiB bound leaves the signature unchecked (judged by the
// User-Agent), and the backend still gets every byte.
func TestSignedContentDigest(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	dirJSON, err := webbotauth.DirectoryJSON(pub)
	if err != nil {
		t.Fatal(err)
	}
	good := keyDirectory(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", webbotauth.DirectoryMediaType)
		_, _ = w.Write(dirJSON)
	})
	var backendHits atomic.Int64
	backendURL := keyDirectory(t, func(w http.ResponseWriter, r *http.Request) {
		backendHits.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sum := sha256.Sum256(body)
		fmt.Fprintf(w, "got %d bytes %x", len(body), sum)
	})
	c := newClient(t, digestConfig(good, backendURL))
	site := "digest.localhost"
	post := func(path string, body []byte, sign func(*http.Request)) response {
		t.Helper()
		req, _ := http.NewRequest("POST", siteURL(site)+path, bytes.NewReader(body))
		req.Header.Set("User-Agent", chromeUA)
		sign(req)
		res, err := c.tc.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return response{status: res.StatusCode, body: string(b), header: res.Header}
	}
	echo := func(body []byte) string {
		return fmt.Sprintf("got %d bytes %x", len(body), sha256.Sum256(body))
	}
	opts := webbotauth.SignOptions{Key: priv, Agent: good,
		Components: []string{"@authority", "@method", "@path", "signature-agent", "content-digest"}}
	body := []byte(`{"order": 1, "amount": "10.00"}`)
	var captured http.Header
	res := post("/private/form", body, func(r *http.Request) {
		r.Header.Set("Content-Digest", webbotauth.ContentDigest(body))
		if err := webbotauth.Sign(r, opts); err != nil {
			t.Fatal(err)
		}
		captured = r.Header.Clone()
	})
	if res.status != 200 || res.body != echo(body) {
		t.Fatalf("signed with its own body: %d %q, want 200 %q (verified, judged by SignedBot's group)", res.status, res.body, echo(body))
	}
	// The same signature, replayed with another body, within its window.
	hits := backendHits.Load()
	other := []byte(`{"order": 1, "amount": "99999.00"}`)
	res = post("/private/form", other, func(r *http.Request) {
		for _, k := range []string{"Signature", "Signature-Input", "Signature-Agent", "Content-Digest"} {
			r.Header[k] = captured[k]
		}
	})
	if res.status != 403 || !strings.Contains(res.body, "does not verify") || !strings.Contains(res.body, "Content-Digest does not match the request body") {
		t.Errorf("replayed with another body: %d %q, want 403 naming the Content-Digest", res.status, res.body)
	}
	if backendHits.Load() != hits {
		t.Errorf("the replayed request reached the backend")
	}
	// A body over the bound: not checked, so not verified; judged by its
	// User-Agent (a browser's, on a path "*" allows), and passed whole.
	big := bytes.Repeat([]byte("0123456789abcdef"), (2<<20)/16)
	res = post("/upload", big, func(r *http.Request) {
		r.Header.Set("Content-Digest", webbotauth.ContentDigest(big))
		if err := webbotauth.Sign(r, opts); err != nil {
			t.Fatal(err)
		}
	})
	if res.status != 200 || res.body != echo(big) {
		t.Errorf("a signed 2 MiB body: %d %q, want 200 %q", res.status, res.body, echo(big))
	}
	// Behind handle_path the signature is checked on the request as the
	// client sent it (a copy); the body read for the digest still reaches
	// the backend.
	site = "digestpath.localhost"
	res = post("/api/private/form", body, func(r *http.Request) {
		r.Header.Set("Content-Digest", webbotauth.ContentDigest(body))
		if err := webbotauth.Sign(r, opts); err != nil {
			t.Fatal(err)
		}
	})
	if res.status != 200 || res.body != echo(body) {
		t.Errorf("signed, behind handle_path: %d %q, want 200 %q", res.status, res.body, echo(body))
	}
}
