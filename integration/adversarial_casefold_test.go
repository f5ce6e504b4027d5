package integration

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAdversarialCaseFoldUnicode: behind backends that ignore case the way
// real servers do (upper-casing with Unicode's mappings as IIS and NTFS
// do, lower-casing as many applications do), a bot spells a disallowed
// path with a non-ASCII letter that the backend reads as an ASCII one:
// dotless ı (upper-cased: I), İ (lower-cased: i), the Kelvin sign K
// (lower-cased: k), the long s ſ (upper-cased: S). With
// case_insensitive_paths each is refused, raw or percent-encoded, while
// an allowed path with a non-ASCII letter is still served.
func TestAdversarialCaseFoldUnicode(t *testing.T) {
	const robots = "User-agent: *\nDisallow: /private/\nDisallow: /key\nDisallow: /secret\n"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The host says how this server ignores case.
		p := strings.ToLower(r.URL.Path)
		if strings.HasPrefix(r.Host, "upper.") {
			p = strings.ToLower(strings.ToUpper(r.URL.Path))
		}
		switch {
		case p == "/robots.txt":
			_, _ = io.WriteString(w, robots)
		case strings.HasPrefix(p, "/private/"), strings.HasPrefix(p, "/key"), strings.HasPrefix(p, "/secret"):
			_, _ = io.WriteString(w, "secret:"+p)
		default:
			_, _ = io.WriteString(w, "page:"+p)
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	site := func(host string) string {
		return siteURL(host) + ` {
	robots {
		crawl_delay off
		strikes off
		case_insensitive_paths
	}
	reverse_proxy ` + ln.Addr().String() + `
}
`
	}
	c := newClient(t, globals+site("upper.localhost")+site("lower.localhost"))
	settle(c, siteURL("upper.localhost")+"/")
	const bot = "FoldBot/1.0 (+https://fold.example/bot)"
	for host, paths := range map[string][]string{
		"upper.localhost": {"/pr%C4%B1vate/x", "/PR%C4%B1VATE/x", "/pr\u0131vate/x", "/%C5%BFecret", "/%C5%BFECRET/a"},
		"lower.localhost": {"/PR%C4%B0VATE/x", "/pr%c4%b0vate/x", "/PR\u0130VATE/x", "/%E2%84%AAey", "/%E2%84%AAEY.txt"},
	} {
		for _, p := range paths {
			res := c.get(siteURL(host)+p, bot)
			if res.status != 403 || strings.Contains(res.body, "secret:") {
				t.Errorf("%s%s: %d %q, want 403", host, p, res.status, res.body)
			}
		}
	}
	// What the rules allow is still served, non-ASCII letters included.
	c.expect(siteURL("lower.localhost")+"/caf%C3%A9", bot, 200, "page:/caf\u00e9")
	c.expect(siteURL("upper.localhost")+"/%C3%89t%C3%A9/", bot, 200, "page:/\u00e9t\u00e9/")
	c.expect(siteURL("upper.localhost")+"/PUBLIC", bot, 200, "page:/public")
}
