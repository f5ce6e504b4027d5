package admin

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"testing"
)

// TestCheckHTTPRequest: a check judges the request a client would send for
// the URL: the target exactly as written after the authority (not cleaned,
// no fragment), the client's address, its headers, and TLS for https.
func TestCheckHTTPRequest(t *testing.T) {
	ip := netip.MustParseAddr("192.0.2.7")
	for _, c := range []struct{ url, target string }{
		{"http://h.example//private/x", "//private/x"},
		{"http://h.example", "/"},
		{"http://h.example?q=1", "/?q=1"},
		{"https://h.example/a/../b#frag", "/a/../b"},
	} {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		req := CheckRequest{UserAgent: "GPTBot/1.2", URL: c.url, Headers: map[string]string{"X-Original-URL": "/private/"}}
		r, err := checkHTTPRequest(context.Background(), req, u, ip)
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		if r.RequestURI != c.target || r.Method != http.MethodGet || r.Host != "h.example" ||
			r.RemoteAddr != "192.0.2.7:0" || r.UserAgent() != "GPTBot/1.2" || r.Header.Get("X-Original-URL") != "/private/" {
			t.Errorf("%s: %s %q host %q from %s, headers %v", c.url, r.Method, r.RequestURI, r.Host, r.RemoteAddr, r.Header)
		}
		if (r.TLS != nil) != (u.Scheme == "https") {
			t.Errorf("%s: TLS %v", c.url, r.TLS)
		}
	}
}

// TestCheckRefusesBadInput: a URL that is not absolute http(s) or an
// address that does not parse is the request's fault (400), before any
// handler is asked.
func TestCheckRefusesBadInput(t *testing.T) {
	for _, req := range []CheckRequest{
		{UserAgent: "GPTBot/1.2", IP: "192.0.2.1", URL: "/relative"},
		{UserAgent: "GPTBot/1.2", IP: "192.0.2.1", URL: "ftp://x/"},
		{UserAgent: "GPTBot/1.2", IP: "not-an-ip", URL: "http://h.example/"},
	} {
		_, err := Check(context.Background(), nil, req)
		if e, ok := err.(Error); !ok || e.Status != http.StatusBadRequest {
			t.Errorf("check %+v: %v, want a 400", req, err)
		}
	}
}
