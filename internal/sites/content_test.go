package sites

import (
	"net/http"
	"strings"
	"testing"
)

// TestContentWarningsPerSite: a robots.txt that loads but is an HTML page,
// UTF-16, without a group, cut at 500 KiB, or without the trap's Disallow
// line is reported with a warning in the site's status, instead of a plain
// "ok"; a good file has none, and an empty one (a deliberate allow-all)
// only the trap's.
func TestContentWarningsPerSite(t *testing.T) {
	big := "User-agent: *\n" + strings.Repeat("Disallow: /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/\n", 600*1024/40) + "Disallow: /no-robots/\n"
	bodies := map[string]string{
		"html.example":    "<!DOCTYPE html>\n<html><head><title>Not found</title></head><body>Sorry</body></html>\n",
		"utf16.example":   "\xff\xfeU\x00s\x00e\x00r\x00-\x00a\x00g\x00e\x00n\x00t\x00:\x00 \x00*\x00\n\x00",
		"nogroup.example": "Disallow: /private/\nSitemap: https://nogroup.example/sitemap.xml\n",
		"big.example":     big,
		"notrap.example":  "User-agent: *\nDisallow: /private/\n",
		"good.example":    "User-agent: *\nDisallow: /private/\nDisallow: /no-robots/\n",
		"empty.example":   "",
	}
	want := map[string]string{
		"html.example":    "an HTML page",
		"utf16.example":   "UTF-16",
		"nogroup.example": "no user-agent group",
		"big.example":     "larger than 500 KiB",
		"notrap.example":  "Disallow: /no-robots/",
		"empty.example":   "Disallow: /no-robots/", // allows everything, the trap too
	}
	f := &fakeSite{answer: func(host string) (int, string) {
		return http.StatusOK, bodies[strings.TrimSuffix(host, ":8080")]
	}}
	l := newSiteLoader(t, f, 8080, Config{Trap: "/no-robots/"})
	for host := range bodies {
		snapshot(l, host)
	}
	got := map[string][]string{}
	for _, st := range l.Status() {
		if st.State != "ok" {
			t.Errorf("%s: state %s, want ok", st.Host, st.State)
		}
		got[strings.TrimSuffix(st.Host, ":8080")] = st.Warnings
	}
	if len(got) != len(bodies) {
		t.Fatalf("status has %d sites, want %d: %v", len(got), len(bodies), got)
	}
	for host := range bodies {
		ws := strings.Join(got[host], " | ")
		w, bad := want[host]
		switch {
		case !bad && ws != "":
			t.Errorf("%s: warnings %q, want none", host, ws)
		case bad && !strings.Contains(ws, w):
			t.Errorf("%s: warnings %q, want one saying %q", host, ws, w)
		}
	}
	if ws := got["empty.example"]; len(ws) != 1 {
		t.Errorf("empty.example: %q, want only the trap's warning", ws)
	}
	if ws := got["html.example"]; len(ws) != 2 || !strings.Contains(ws[1], "/no-robots/") {
		t.Errorf("html.example: %q, want the HTML warning and the trap's", ws)
	}
}
