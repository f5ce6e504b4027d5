package integration

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// bansList is GET /robots/bans as the tests read it.
type bansList struct {
	Bans []struct {
		Identity string `json:"identity"`
		Crawler  string `json:"crawler"`
		Token    string `json:"token"`
		Site     string `json:"site"`
		Network  string `json:"network"`
		Since    string `json:"since"`
		Strikes  []struct {
			Line    int    `json:"line"`
			Version string `json:"version"`
		} `json:"strikes"`
	} `json:"bans"`
}

// TestAdminBansWhoAndLift: /robots/bans names the crawler that earned each
// ban, its token, address, site block, and the rule lines of its strikes;
// DELETE lifts a ban by identity, by address or network, by crawler, and
// all of them.
func TestAdminBansWhoAndLift(t *testing.T) {
	cfg := trustLocalProxy()
	c := newClient(t, cfg+siteURL("banlist.localhost")+` {
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		strikes 2 10m 1h
		crawl_delay off
	}
	respond "ok"
}
`)
	u := siteURL("banlist.localhost")
	earn := func(name, ip string) {
		t.Helper()
		ua := name + "/1.0 (+https://" + strings.ToLower(name) + ".example/bot)"
		for i := range 2 {
			c.get(u+"/private/"+string(rune('a'+i)), ua, "X-Forwarded-For: "+ip)
		}
		if res := c.get(u+"/", ua, "X-Forwarded-For: "+ip); res.status != 403 || !strings.Contains(res.body, "banned") ||
			!strings.Contains(res.body, "Strike: line 2 of robots.txt version") || !strings.Contains(res.body, "Site: banlist.localhost") {
			t.Fatalf("%s from %s is not banned, or the refusal does not say why: %d %q", name, ip, res.status, res.body)
		}
	}
	served := func(name, ip string) bool {
		ua := name + "/1.0 (+https://" + strings.ToLower(name) + ".example/bot)"
		return c.get(u+"/", ua, "X-Forwarded-For: "+ip).status == 200
	}
	earn("ABot", "198.51.100.1")
	earn("BBot", "198.51.100.2")
	earn("CBot", "198.51.100.3")
	earn("CBot", "198.51.100.4")
	earn("DBot", "203.0.113.9")

	var list bansList
	adminJSON(t, http.MethodGet, "/robots/bans", nil, http.StatusOK, &list)
	ids := map[string]string{}
	for _, b := range list.Bans {
		if b.Site != "banlist.localhost" {
			continue
		}
		ids[b.Crawler+"@"+b.Network] = b.Identity
		if b.Token != "*" || b.Since == "" || len(b.Strikes) != 2 || b.Strikes[0].Line != 2 || b.Strikes[0].Version == "" {
			t.Errorf("ban entry does not say who and why: %+v", b)
		}
	}
	for _, want := range []string{"ABot@198.51.100.1/32", "BBot@198.51.100.2/32", "CBot@198.51.100.3/32", "CBot@198.51.100.4/32", "DBot@203.0.113.9/32"} {
		if ids[want] == "" {
			t.Fatalf("no ban %s listed: %+v", want, list)
		}
	}

	adminJSON(t, http.MethodDelete, "/robots/bans/"+url.PathEscape(ids["ABot@198.51.100.1/32"]), nil, http.StatusOK, nil)
	if !served("ABot", "198.51.100.1") || served("BBot", "198.51.100.2") {
		t.Error("DELETE by identity: ABot not served, or BBot served")
	}
	adminJSON(t, http.MethodDelete, "/robots/bans?address=198.51.100.2", nil, http.StatusOK, nil)
	if !served("BBot", "198.51.100.2") || served("CBot", "198.51.100.3") {
		t.Error("DELETE by address: BBot not served, or CBot served")
	}
	var lifted struct {
		Lifted []struct{ Crawler string } `json:"lifted"`
	}
	adminJSON(t, http.MethodDelete, "/robots/bans?crawler=CBot", nil, http.StatusOK, &lifted)
	if len(lifted.Lifted) != 2 || !served("CBot", "198.51.100.3") || !served("CBot", "198.51.100.4") || served("DBot", "203.0.113.9") {
		t.Errorf("DELETE by crawler lifted %+v", lifted)
	}
	earn("EBot", "203.0.113.10")
	adminJSON(t, http.MethodDelete, "/robots/bans?address=203.0.113.0/24", nil, http.StatusOK, &lifted)
	if len(lifted.Lifted) != 2 || !served("DBot", "203.0.113.9") || !served("EBot", "203.0.113.10") {
		t.Errorf("DELETE by network lifted %+v", lifted)
	}
	earn("FBot", "192.0.2.7")
	adminJSON(t, http.MethodDelete, "/robots/bans?all=true", nil, http.StatusOK, nil)
	if !served("FBot", "192.0.2.7") {
		t.Error("DELETE all: FBot still banned")
	}
	adminJSON(t, http.MethodGet, "/robots/bans", nil, http.StatusOK, &list)
	for _, b := range list.Bans {
		if b.Site == "banlist.localhost" {
			t.Errorf("a ban survived DELETE all: %+v", b)
		}
	}
	adminJSON(t, http.MethodDelete, "/robots/bans?crawler=X&all=true", nil, http.StatusBadRequest, nil)
}
