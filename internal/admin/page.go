package admin

// GET /robots/: the status page, the facts of GET /robots/status and GET
// /robots/bans as one self-contained HTML page (status.html).

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"
)

// pageMaxSites is the most sites per handler the status page lists; the
// JSON status lists them all.
const pageMaxSites = 200

// MoreSites is how many sites the page leaves out for h.
func (h HandlerStatus) MoreSites() int { return h.moreSites }

// pageData is what the status page shows: the status report and the bans.
type pageData struct {
	StatusReport
	Bans  BansReport
	Sites int
	// Admin is the admin API's address as the page was asked for it (the
	// request's Host), for the commands the page suggests.
	Admin string
}

// LiftScript is the page's one script, the lift buttons of the ban list:
// inline, and allowed by its hash in the Content-Security-Policy. It is
// our own embedded file, never anything a request brought.
func (pageData) LiftScript() template.JS { return template.JS(liftJS) }

// liftJS is the script of the status page's lift buttons.
//
//go:embed lift.js
var liftJS string

// pageCSP is the status page's Content-Security-Policy: inline styles,
// inline SVG, the lift script by its hash and its DELETE to the page's own
// origin; nothing else.
var pageCSP = func() string {
	sum := sha256.Sum256([]byte(liftJS))
	return "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-" +
		base64.StdEncoding.EncodeToString(sum[:]) + "'; connect-src 'self'"
}()

// InForce returns the bans in force: those not earned in mode log.
func (d pageData) InForce() []BanEntry { return d.bansIn(false) }

// Logged returns the bans earned in mode log: the crawlers would be
// banned, but nothing refuses them.
func (d pageData) Logged() []BanEntry { return d.bansIn(true) }

func (d pageData) bansIn(logged bool) []BanEntry {
	var out []BanEntry
	for _, b := range d.Bans.Bans {
		if (b.Mode == "log") == logged {
			out = append(out, b)
		}
	}
	return out
}

// banTable is one table of bans on the status page, with the page's time.
type banTable struct {
	Now  time.Time
	Bans []BanEntry
}

// servePage writes the HTML status page: the facts of GET /robots/status
// and GET /robots/bans, self-contained (inline CSS, no script, no external
// asset) and readable on a phone.
func (a *API) servePage(w http.ResponseWriter, r *http.Request) error {
	now := time.Now()
	ss := a.Sites()
	scans := banScans{}
	data := pageData{StatusReport: buildStatus(r.Context(), ss, now, scans), Bans: listBans(r.Context(), ss, now, scans), Admin: a.address(r)}
	data.Sites = distinctSites(data.StatusReport)
	for i := range data.Handlers {
		h := &data.Handlers[i]
		if len(h.Sites) > pageMaxSites {
			h.moreSites = len(h.Sites) - pageMaxSites
			h.Sites = h.Sites[:pageMaxSites]
		}
	}
	var buf bytes.Buffer
	if err := statusPage.Execute(&buf, data); err != nil {
		return fmt.Errorf("robots: rendering the status page: %w", err)
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Security-Policy", pageCSP)
	hdr.Set("Referrer-Policy", "no-referrer")
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("robots: writing the status page: %w", err)
	}
	return nil
}

// address is the admin API's address for curl commands: the Host the
// page was asked with (the admin API only answers Hosts it allows), or
// the default address when the request had none (a Unix socket).
func (a *API) address(r *http.Request) string {
	if r.Host == "" {
		return a.DefaultAddress
	}
	return r.Host
}

// humanAge formats a duration in seconds as "42s", "5m 3s", "2h 10m" or
// "3d 4h".
func humanAge(sec float64) string {
	d := time.Duration(sec * float64(time.Second)).Round(time.Second)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm %ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd %dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

var pageFuncs = template.FuncMap{
	"age": func(p *float64) string {
		if p == nil {
			return "—"
		}
		return humanAge(*p)
	},
	// since is the time from t to now, as an age.
	"since": func(now time.Time, t *time.Time) string {
		if t == nil {
			return "—"
		}
		if d := now.Sub(*t); d >= 0 {
			return humanAge(d.Seconds()) + " ago"
		}
		return "in " + humanAge(t.Sub(now).Seconds())
	},
	// next is when a refresh is due: "in 5m 2s", or "due now".
	"next": func(now time.Time, t *time.Time) string {
		if t == nil || !t.After(now) {
			return "due now"
		}
		return "in " + humanAge(t.Sub(now).Seconds())
	},
	"ptr": func(t time.Time) *time.Time { return &t },
	// when is the time t points to, as a stamp.
	"when": func(t *time.Time) string {
		if t == nil {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"until": func(now, t time.Time) string { return "for " + humanAge(t.Sub(now).Seconds()) },
	"stamp": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"site": func(host string) string {
		if host == "" {
			return "(every host)"
		}
		return host
	},
	// pct is n as a percentage of total, for the bars.
	"pct": func(n, total uint64) int {
		if total == 0 {
			return 0
		}
		return int(n * 100 / total)
	},
	// bansOf is the argument of the "bans" table template.
	"bansOf": func(now time.Time, bans []BanEntry) banTable { return banTable{Now: now, Bans: bans} },
	"sum":    func(a, b uint64) uint64 { return a + b },
	"secs":   humanAge,
}

// statusHTML is the status page's template: inline CSS, no script, no
// external asset.
//
//go:embed status.html
var statusHTML string

var statusPage = template.Must(template.New("status").Funcs(pageFuncs).Parse(statusHTML))
