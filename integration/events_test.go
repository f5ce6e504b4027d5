package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"
)

// eventRecorder is an events handler for the tests, subscribed with
// `events { on <event> robots_test_record <file> }` as an operator
// subscribes exec or a webhook: it appends each event it handles to the
// file, as a JSON line {"name", "module", "data"}.
type eventRecorder struct {
	File string `json:"file"`
}

func init() { caddy.RegisterModule(eventRecorder{}) }

// CaddyModule returns the Caddy module information.
func (eventRecorder) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "events.handlers.robots_test_record", New: func() caddy.Module { return new(eventRecorder) }}
}

// UnmarshalCaddyfile reads `robots_test_record <file>`.
func (r *eventRecorder) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if !d.NextArg() {
		return d.ArgErr()
	}
	r.File = d.Val()
	return nil
}

var recordMu sync.Mutex

// Handle appends the event to the file.
func (r *eventRecorder) Handle(_ context.Context, e caddy.Event) error {
	line, err := json.Marshal(map[string]any{"name": e.Name(), "module": string(e.Origin().CaddyModule().ID), "data": e.Data})
	if err != nil {
		return err
	}
	recordMu.Lock()
	defer recordMu.Unlock()
	f, err := os.OpenFile(r.File, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}

type recordedEvent struct {
	Name   string         `json:"name"`
	Module string         `json:"module"`
	Data   map[string]any `json:"data"`
}

// recorded reads the events of file.
func recorded(t *testing.T, file string) []recordedEvent {
	t.Helper()
	recordMu.Lock()
	defer recordMu.Unlock()
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []recordedEvent
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var e recordedEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("event line %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

// waitEvent waits for an event named name whose data has every key of want
// with its value (compared as text), and returns it.
func waitEvent(t *testing.T, file, name string, want map[string]string) recordedEvent {
	t.Helper()
	var found recordedEvent
	eventually(t, 5*time.Second, "event "+name+" "+fmt.Sprint(want), func() bool {
		for _, e := range recorded(t, file) {
			if e.Name != name {
				continue
			}
			ok := true
			for k, v := range want {
				if fmt.Sprint(e.Data[k]) != v {
					ok = false
				}
			}
			if ok {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// TestEvents: the handler emits Caddy events when a robots.txt version is
// published, a crawler is banned, a ban is lifted through the admin API and
// a load fails, and an events handler subscribed in the Caddyfile's events
// option receives them with their data.
func TestEvents(t *testing.T) {
	file := filepath.Join(t.TempDir(), "events.jsonl")
	backend.set("events.localhost", 200, "User-agent: *\nDisallow: /private/\n")
	c := newClient(t, globalsWith(`	events {
		on robots_crawler_banned robots_test_record `+file+`
		on robots_ban_lifted robots_test_record `+file+`
		on robots_version_published robots_test_record `+file+`
		on robots_load_failed robots_test_record `+file+`
	}
`)+siteURL("events.localhost")+` {
	robots {
		strikes 2 10m 1h
		crawl_delay off
	}
	reverse_proxy `+backend.addr+`
}
`)
	settle(c, siteURL("events.localhost")+"/")
	const bot = "EventBot/1.0 (+https://events.example/bot)"
	c.expect(siteURL("events.localhost")+"/public", bot, 200)
	pub := waitEvent(t, file, "robots_version_published", map[string]string{"host": "events.localhost", "source": "site", "previous": ""})
	if pub.Module != "http.handlers.robots" || len(fmt.Sprint(pub.Data["version"])) != 12 {
		t.Errorf("published event: %+v", pub)
	}

	c.expect(siteURL("events.localhost")+"/private/1", bot, 403)
	c.expect(siteURL("events.localhost")+"/private/2", bot, 403)
	c.expect(siteURL("events.localhost")+"/public", bot, 403, "banned until")
	ban := waitEvent(t, file, "robots_crawler_banned", map[string]string{
		"crawler": "EventBot", "token": "*", "address": "127.0.0.1/32", "host": "events.localhost",
		"line": "2", "version": fmt.Sprint(pub.Data["version"]), "strikes": "2", "mode": "enforce", "seconds": "3600",
	})
	identity := fmt.Sprint(ban.Data["identity"])
	site := "events.localhost on :" + strconv.Itoa(httpPort) // the site block, as the status page names it
	if !strings.Contains(identity, "EventBot@127.0.0.1/32") || ban.Data["site"] != site {
		t.Errorf("banned event: %+v", ban)
	}
	if pub.Data["site"] != site {
		t.Errorf("published event does not name the site block %q: %+v", site, pub)
	}
	// A request refused by the ban starts no new ban: one event.
	if n := countEvents(t, file, "robots_crawler_banned"); n != 1 {
		t.Errorf("%d banned events, want 1", n)
	}

	status, body := admin(t, http.MethodDelete, "/robots/bans/"+url.PathEscape(identity), nil)
	if status != http.StatusOK {
		t.Fatalf("unban: %d %s", status, body)
	}
	lifted := waitEvent(t, file, "robots_ban_lifted", map[string]string{"identity": identity, "crawler": "EventBot", "address": "127.0.0.1/32"})
	if lifted.Data["by"] == "" || lifted.Data["site"] != site {
		t.Errorf("lifted event does not say who asked or the site block %q: %+v", site, lifted)
	}
	c.expect(siteURL("events.localhost")+"/public", bot, 200)

	// The origin fails: the load fails, the last good version stays.
	backend.set("events.localhost", 500, "down")
	status, body = admin(t, http.MethodPost, "/robots/reload", nil)
	if status != http.StatusOK {
		t.Fatalf("reload: %d %s", status, body)
	}
	failed := waitEvent(t, file, "robots_load_failed", map[string]string{"host": "events.localhost", "source": "site"})
	if !strings.Contains(fmt.Sprint(failed.Data["error"]), "500") || failed.Data["site"] != site {
		t.Errorf("load failed event does not say why or the site block %q: %+v", site, failed)
	}
	c.expect(siteURL("events.localhost")+"/private/3", bot, 403, "Disallow: /private/")

	// A changed file is a new version, with its previous one.
	backend.set("events.localhost", 200, "User-agent: *\nDisallow: /other/\n")
	admin(t, http.MethodPost, "/robots/reload", nil)
	waitEvent(t, file, "robots_version_published", map[string]string{"host": "events.localhost", "previous": fmt.Sprint(pub.Data["version"])})
}

// TestLoadFailedOncePerOutage: a site whose robots.txt source keeps failing
// raises robots_load_failed once per outage, not on every attempt (an
// alert storm: one every 30 s per down site), and robots_load_recovered
// when a load succeeds again, with how long the site was down and how many
// loads failed. A new outage is announced again.
func TestLoadFailedOncePerOutage(t *testing.T) {
	const host = "outage.localhost"
	file := filepath.Join(t.TempDir(), "events.jsonl")
	backend.set(host, 200, "User-agent: *\nDisallow: /private/\n")
	c := newClient(t, globalsWith(`	events {
		on robots_load_failed robots_test_record `+file+`
		on robots_load_recovered robots_test_record `+file+`
	}
`)+siteURL(host)+` {
	robots {
		crawl_delay off
		strikes off
	}
	reverse_proxy `+backend.addr+`
}
`)
	settle(c, siteURL(host)+"/")
	const bot = "OutageBot/1.0 (+https://outage.example/bot)"
	c.expect(siteURL(host)+"/private/x", bot, 403)

	backend.set(host, 500, "down")
	const attempts = 5
	for range attempts {
		if status, body := admin(t, http.MethodPost, "/robots/reload", nil); status != http.StatusOK {
			t.Fatalf("reload: %d %s", status, body)
		}
	}
	first := waitEvent(t, file, "robots_load_failed", map[string]string{"host": host, "source": "site", "failures": "1"})
	if !strings.Contains(fmt.Sprint(first.Data["error"]), "500") || first.Data["since"] == "" {
		t.Errorf("failed event: %+v", first)
	}
	c.expect(siteURL(host)+"/private/x", bot, 403, "Disallow: /private/") // the last good copy

	backend.set(host, 200, "User-agent: *\nDisallow: /private/\n")
	admin(t, http.MethodPost, "/robots/reload", nil)
	rec := waitEvent(t, file, "robots_load_recovered", map[string]string{"host": host, "source": "site", "since": fmt.Sprint(first.Data["since"])})
	if n, _ := strconv.Atoi(fmt.Sprint(rec.Data["failures"])); n < attempts {
		t.Errorf("recovered event: %v failures, want at least %d: %+v", rec.Data["failures"], attempts, rec)
	}
	if d, err := strconv.ParseFloat(fmt.Sprint(rec.Data["down_seconds"]), 64); err != nil || d < 0 || rec.Data["until"] == "" {
		t.Errorf("recovered event: %+v", rec)
	}
	if site := host + " on :" + strconv.Itoa(httpPort); first.Data["site"] != site || rec.Data["site"] != site {
		t.Errorf("failed and recovered events do not name the site block %q: %+v, %+v", site, first, rec)
	}
	if n := countSiteEvents(t, file, "robots_load_failed", host); n != 1 {
		t.Errorf("%d failed events for %d failed loads of one outage, want 1", n, attempts)
	}
	// A success after the recovery is not another recovery.
	admin(t, http.MethodPost, "/robots/reload", nil)
	// A new outage is announced again.
	backend.set(host, 500, "down again")
	admin(t, http.MethodPost, "/robots/reload", nil)
	eventually(t, 5*time.Second, "the second outage's failed event", func() bool {
		return countSiteEvents(t, file, "robots_load_failed", host) == 2
	})
	if n := countSiteEvents(t, file, "robots_load_recovered", host); n != 1 {
		t.Errorf("%d recovered events after one recovery, want 1", n)
	}
}

// countSiteEvents counts the events named name in file whose host is host.
func countSiteEvents(t *testing.T, file, name, host string) int {
	n := 0
	for _, e := range recorded(t, file) {
		if e.Name == name && e.Data["host"] == host {
			n++
		}
	}
	return n
}

// countEvents counts the events named name in file.
func countEvents(t *testing.T, file, name string) int {
	n := 0
	for _, e := range recorded(t, file) {
		if e.Name == name {
			n++
		}
	}
	return n
}

// Interface guards.
var (
	_ caddyevents.Handler   = (*eventRecorder)(nil)
	_ caddyfile.Unmarshaler = (*eventRecorder)(nil)
)
