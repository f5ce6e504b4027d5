package admin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/internal/policy"
	"github.com/caddyrobots/caddy-robots/internal/sites"
)

// twoBlocks is two site-source handlers of one server (":8080"), sharing
// its site table as handlers of one server do: one for a.example, one
// catch-all; a.example and b.example have been loaded.
func twoBlocks(t *testing.T) []Site {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	table := sites.NewTable("site")
	srv := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("User-agent: *\nDisallow: /private/\n"))
	})
	var ls []*sites.Loader
	for range 2 {
		l, err := sites.NewLoader(ctx, table, sites.Config{Kind: sites.FromSite, MaxRuleMemory: 64 << 20})
		if err != nil {
			t.Fatal(err)
		}
		l.SetServer(sites.Server{Handler: srv, Key: ":8080", Port: 8080})
		ls = append(ls, l)
	}
	for i, host := range []string{"a.example", "b.example"} {
		r := httptest.NewRequest("GET", "http://"+host+":8080/x", nil)
		if ls[i].Snapshot(r, policy.HostOf(r.Host)).Current() == nil {
			t.Fatalf("%s: no rules loaded", host)
		}
	}
	return []Site{
		{Source: "site", Mode: "enforce", Loader: ls[0], Block: &Block{Name: "a.example on :8080", Hosts: []string{"a.example"}, Listen: ":8080"}},
		{Source: "site", Mode: "enforce", Loader: ls[1], Block: &Block{Name: "* on :8080", Listen: ":8080"}},
	}
}

// TestSiteBlocksNamedAndOwnSites: each handler is named by its site block
// and lists only the sites it serves (the catch-all those no other block
// matches); the page counts each site once and names the blocks, not
// "Handler 0"; a reload reports each site under the block serving it.
func TestSiteBlocksNamedAndOwnSites(t *testing.T) {
	ss := twoBlocks(t)
	rep := Status(context.Background(), ss, time.Now())
	hosts := func(h HandlerStatus) string {
		var out []string
		for _, s := range h.Sites {
			out = append(out, s.Host)
		}
		return strings.Join(out, ",")
	}
	if got := hosts(rep.Handlers[0]); got != "a.example" {
		t.Errorf("a.example's block lists %q", got)
	}
	if got := hosts(rep.Handlers[1]); got != "b.example" {
		t.Errorf("the catch-all lists %q, want b.example alone", got)
	}
	if rep.Handlers[0].SiteBlock != "a.example on :8080" || rep.Handlers[1].SiteBlock != "* on :8080" {
		t.Errorf("site blocks %q, %q", rep.Handlers[0].SiteBlock, rep.Handlers[1].SiteBlock)
	}

	w := httptest.NewRecorder()
	api := &API{Sites: func() []Site { return ss }}
	if err := api.servePage(w, httptest.NewRequest("GET", "/robots/", nil)); err != nil {
		t.Fatal(err)
	}
	page := w.Body.String()
	if !strings.Contains(page, `<b>2</b><span>sites</span>`) {
		t.Error("the SITES tile must count 2 distinct sites")
	}
	if !strings.Contains(page, `<h2 class="site-block">a.example on :8080</h2>`) || strings.Contains(page, "<h2>Handler 0") {
		t.Error("the card must be named by its site block")
	}

	rr := Reload(context.Background(), ss)
	if len(rr.Reloaded) != 2 {
		t.Fatalf("reloaded %+v", rr.Reloaded)
	}
	for _, r := range rr.Reloaded {
		want := map[string]int{"a.example": 0, "b.example": 1}[r.Host]
		if r.Handler != want || r.SiteBlock != ss[want].Block.Name {
			t.Errorf("%s reported under handler %d (%q), want %d (%q)", r.Host, r.Handler, r.SiteBlock, want, ss[want].Block.Name)
		}
	}
}

// TestIPListsOnce: the IP lists every handler shares are reported once,
// not under each handler.
func TestIPListsOnce(t *testing.T) {
	l := []IPListStatus{{Method: "googlebot", AsOf: time.Unix(1e9, 0), Sources: []string{"https://x"}}}
	rep := StatusReport{Handlers: []HandlerStatus{{IPLists: l}, {IPLists: l}}}
	shareIPLists(&rep)
	if len(rep.IPLists) != 1 || rep.Handlers[0].IPLists != nil || rep.Handlers[1].IPLists != nil {
		t.Errorf("report %+v", rep)
	}
}
