package sites

import (
	"context"
	"strings"
	"testing"
)

// TestReloadWithdrawing: ReloadWithdrawing withdraws every replaced
// version of a site whose load succeeded, so its current version alone
// decides, and reports each; a site whose load failed keeps them, and
// the result says why.
func TestReloadWithdrawing(t *testing.T) {
	f := &fakeSite{answer: always(200, "User-agent: *\nDisallow: /a/\n")}
	l := newSiteLoader(t, f, 8080, Config{})
	first := snapshot(l, "a.example").Current()
	f.set(always(200, "User-agent: *\nDisallow: /b/\n"))
	Reload(context.Background(), []*Loader{l})
	f.set(always(200, "User-agent: *\nDisallow: /c/\n"))
	Reload(context.Background(), []*Loader{l})
	snap := snapshot(l, "a.example")
	if len(snap.Judged) != 3 {
		t.Fatalf("%d versions, want 3", len(snap.Judged))
	}
	cur, second := snap.Judged[0].ID, snap.Judged[1].ID

	f.set(always(500, "down"))
	res := ReloadWithdrawing(context.Background(), []*Loader{l}, "test")
	if len(res) != 1 || len(res[0].Withdrawn) != 0 || !strings.Contains(res[0].NotWithdrawn, "server_error") {
		t.Errorf("a failed reload: %+v, want nothing withdrawn and why", res)
	}
	if n := len(snapshot(l, "a.example").Judged); n != 3 {
		t.Errorf("a failed reload left %d versions, want 3", n)
	}

	f.set(always(200, "User-agent: *\nDisallow: /c/\n"))
	res = ReloadWithdrawing(context.Background(), []*Loader{l}, "test")
	if len(res) != 1 || res[0].Version != cur || res[0].NotWithdrawn != "" || len(res[0].Withdrawn) != 2 ||
		res[0].Withdrawn[0].Version != second || res[0].Withdrawn[1].Version != first.ID || res[0].Withdrawn[0].Host != "a.example" {
		t.Errorf("reload withdrawing: %+v", res)
	}
	if snap := snapshot(l, "a.example"); len(snap.Judged) != 1 || snap.Judged[0].ID != cur {
		t.Errorf("after the withdrawal: %d versions, want only the current one", len(snap.Judged))
	}
}
