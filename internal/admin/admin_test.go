package admin

import (
	"bytes"
	"context"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce/state"
)

func TestAdminPageEscapes(t *testing.T) {
	now := time.Now()
	age := 75.0
	data := pageData{StatusReport: StatusReport{Time: now, Handlers: []HandlerStatus{{
		Source: "site", Mode: "enforce", Server: ":443",
		Sites: []SiteStatus{{Host: `<script>alert(1)</script>.example`, State: "ok", Version: "abc123", AgeSeconds: &age,
			Versions:      []VersionStatus{{ID: "abc123", Current: true}},
			PendingChange: &PendingChange{What: "<i>status 404</i>", Since: now.Add(-5 * time.Second), ConfirmAt: now.Add(55 * time.Second)}}},
		TopCrawlers:    []CrawlerCount{{Name: `"><img src=x>`, Allowed: 1, Refused: 3}},
		Store:          StoreStatus{Type: "memory", Healthy: true},
		ConfigWarnings: []string{"robots: <u>warning</u>"},
	}}}, Bans: BansReport{Bans: []BanEntry{{Identity: "u:a|*@192.0.2.1/32", Crawler: "*", Until: now.Add(time.Hour)}}},
		Admin: `<b>admin</b>:2019`}
	var buf bytes.Buffer
	if err := statusPage.Execute(&buf, data); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"<script>alert", `"><img`, "<i>status", "<u>warning", "<b>admin"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains unescaped %q", bad)
		}
	}
	for _, want := range []string{`name="viewport"`, "&lt;script&gt;", "abc123", "1m 15s", "any new name", "192.0.2.1/32", "width:75%",
		"no rules pending confirmation", "seen 5s ago", "confirmed in 55s"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Error("the page must be self-contained: no external asset")
	}
	// One script, the lift buttons', exactly as the CSP's hash allows it.
	if strings.Count(page, "<script") != 1 || !strings.Contains(page, "<script>"+liftJS+"</script>") {
		t.Error("the page must have one script, the lift buttons', as embedded")
	}
}

func TestAdminHumanAge(t *testing.T) {
	for sec, want := range map[float64]string{0: "0s", 59.4: "59s", 61: "1m 1s", 3600: "1h 0m", 90061: "1d 1h"} {
		if got := humanAge(sec); got != want {
			t.Errorf("humanAge(%v) = %q, want %q", sec, got, want)
		}
	}
}

// countingBans is a real store that counts the ban listings asked of it.
type countingBans struct {
	state.Store
	lister state.BanLister
	calls  atomic.Int32
}

func (c *countingBans) Bans(ctx context.Context, now time.Time, limit int) ([]state.Ban, error) {
	c.calls.Add(1)
	return c.lister.Bans(ctx, now, limit)
}

func (c *countingBans) Unban(ctx context.Context, key string, now time.Time) (bool, error) {
	return c.lister.Unban(ctx, key, now)
}

func (c *countingBans) UnbanWhere(ctx context.Context, match func(state.Ban) bool, now time.Time) ([]state.Ban, error) {
	return c.lister.UnbanWhere(ctx, match, now)
}

// TestStatusPageListsBansOnce: the status page shows the ban counts and the
// list of bans from one listing per store (with Redis, one SCAN per page
// view), and both agree; the JSON endpoints each list on their own.
func TestStatusPageListsBansOnce(t *testing.T) {
	policy := state.StrikePolicy{Strikes: 1, Window: time.Minute, Ban: time.Hour}
	mem := state.NewMemory(state.MemoryConfig{})
	id := state.NewIdentity("BanMeBot", false, netip.MustParseAddr("198.51.100.31"))
	if res, err := mem.Strike(context.Background(), id, policy, time.Now(), state.StrikeInfo{Crawler: "BanMeBot", Token: "*", Line: 2}); err != nil || !res.Banned {
		t.Fatalf("strike: %+v %v", res, err)
	}
	cb := &countingBans{Store: mem, lister: mem}
	site := Site{Source: "inline", Mode: "enforce", Strikes: policy, Store: cb, StoreType: "memory"}
	api := &API{Sites: func() []Site { return []Site{site} }}

	w := httptest.NewRecorder()
	if err := api.servePage(w, httptest.NewRequest("GET", "/robots/", nil)); err != nil {
		t.Fatal(err)
	}
	if n := cb.calls.Load(); n != 1 {
		t.Errorf("the page listed the bans %d times, want 1", n)
	}
	if body := w.Body.String(); !strings.Contains(body, "BanMeBot") || !strings.Contains(body, "198.51.100.31") {
		t.Errorf("the page does not list the ban")
	}

	cb.calls.Store(0)
	scans := banScans{}
	rep := buildStatus(context.Background(), []Site{site}, time.Now(), scans)
	bans := listBans(context.Background(), []Site{site}, time.Now(), scans)
	if n := cb.calls.Load(); n != 1 || rep.Handlers[0].Bans.Count != len(bans.Bans) || len(bans.Bans) != 1 {
		t.Errorf("%d listings; count %d, list %d", n, rep.Handlers[0].Bans.Count, len(bans.Bans))
	}
	buildStatus(context.Background(), []Site{site}, time.Now(), nil)
	listBans(context.Background(), []Site{site}, time.Now(), nil)
	if n := cb.calls.Load(); n != 3 {
		t.Errorf("without a shared scan: %d listings, want 3", n)
	}
}
