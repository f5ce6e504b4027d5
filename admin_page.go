package caddyrobots

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// pageMaxSites is the most sites per handler the status page lists; the
// JSON status lists them all.
const pageMaxSites = 200

// MoreSites is how many sites the page leaves out for h.
func (h handlerStatus) MoreSites() int { return h.moreSites }

// pageData is what the status page shows: the status report and the bans.
type pageData struct {
	statusReport
	Bans  bansReport
	Sites int
	// Admin is the admin API's address as the page was asked for it (the
	// request's Host), for the commands the page suggests.
	Admin string
}

// servePage writes the HTML status page: the facts of GET /robots/status
// and GET /robots/bans, self-contained (inline CSS, no script, no external
// asset) and readable on a phone.
func (a *adminAPI) servePage(w http.ResponseWriter, r *http.Request) error {
	now := time.Now()
	hs := handlers()
	scans := banScans{}
	data := pageData{statusReport: buildStatus(r.Context(), hs, now, scans), Bans: listBans(r.Context(), hs, now, scans), Admin: adminAddress(r)}
	for i := range data.Handlers {
		h := &data.Handlers[i]
		data.Sites += len(h.Sites)
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
	hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	hdr.Set("Referrer-Policy", "no-referrer")
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("robots: writing the status page: %w", err)
	}
	return nil
}

// adminAddress is the admin API's address for curl commands: the Host the
// page was asked with (the admin API only answers Hosts it allows), or
// Caddy's default when the request had none (a Unix socket).
func adminAddress(r *http.Request) string {
	if r.Host == "" {
		return caddy.DefaultAdminListen
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
	"ptr":   func(t time.Time) *time.Time { return &t },
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
	"sum":  func(a, b uint64) uint64 { return a + b },
	"secs": humanAge,
}

var statusPage = template.Must(template.New("status").Funcs(pageFuncs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<link rel="icon" href="data:,">
<title>caddy-robots status</title>
<style>
:root{--fg:#1d2430;--muted:#5b6575;--line:#dde2ea;--bg:#f5f7fa;--card:#fff;--ok:#1a7f37;--warn:#b35900;--bad:#c62828;--accent:#2f5fd0}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{background:#1d2430;color:#fff;padding:14px 16px}
header h1{margin:0;font-size:20px}
header p{margin:2px 0 0;color:#c9d1dc;font-size:13px}
main{max-width:1100px;margin:0 auto;padding:12px}
.chips{display:flex;flex-wrap:wrap;gap:8px;margin:4px 0 12px}
.chip{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:8px 12px;min-width:90px}
.chip b{display:block;font-size:22px}
.chip span{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
section{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:12px 14px;margin:0 0 14px}
h2{font-size:17px;margin:0 0 6px}
h3{font-size:14px;margin:14px 0 6px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.meta{color:var(--muted);font-size:13px;margin:0 0 4px;word-break:break-word}
table{width:100%;border-collapse:collapse;font-size:14px}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);vertical-align:top;word-break:break-word}
th{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
code{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#eef1f6;border-radius:4px;padding:1px 4px}
.ok{color:var(--ok);font-weight:600}.warn{color:var(--warn);font-weight:600}.bad{color:var(--bad);font-weight:600}
.err{color:var(--bad);font-size:13px}
.small{font-size:12px;color:var(--muted)}
.bar{height:8px;background:#e6ebf2;border-radius:4px;overflow:hidden;min-width:60px}
.bar i{display:block;height:100%;background:var(--bad)}
.empty{color:var(--muted);font-style:italic}
.tag{display:inline-block;margin-left:6px;padding:0 6px;border-radius:8px;font-size:11px;font-weight:600;background:#fff1e0;color:var(--warn);border:1px solid #f0c690}
.tag.bad{background:#fdecec;color:var(--bad);border-color:#efb2b2}
ul.warns{margin:4px 0 8px;padding-left:20px;color:var(--warn);font-size:14px}
@media (max-width:640px){
 main{padding:8px}
 table.cards thead{display:none}
 table.cards,table.cards tbody,table.cards tr,table.cards td{display:block;width:100%}
 table.cards tr{border:1px solid var(--line);border-radius:8px;margin:0 0 8px;padding:4px 0}
 table.cards td{border:0;padding:4px 10px 4px 38%;position:relative;min-height:1.9em}
 table.cards td::before{content:attr(data-label);position:absolute;left:10px;width:33%;color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.03em;padding-top:2px}
}
</style>
</head>
<body>
<header>
<h1>caddy-robots</h1>
<p>Status at {{stamp .Time}} · JSON: /robots/status · bans: /robots/bans</p>
</header>
<main>
<div class="chips">
<div class="chip"><b>{{len .Handlers}}</b><span>handlers</span></div>
<div class="chip"><b>{{.Sites}}</b><span>sites</span></div>
<div class="chip"><b class="{{if .Bans.Bans}}bad{{end}}">{{len .Bans.Bans}}{{if .Bans.Truncated}}+{{end}}</b><span>bans in force</span></div>
</div>
{{if not .Handlers}}<section><p class="empty">No robots handler is running.</p></section>{{end}}
{{$now := .Time}}
{{range .Handlers}}
<section>
<h2>Handler {{.Index}} · source {{.Source}} · {{.Mode}}</h2>
{{if .File}}<p class="meta">File <code>{{.File}}</code></p>{{end}}
<p class="meta">Server {{if .Server}}<code>{{.Server}}</code>{{else}}not seen yet (no request served){{end}} · grace {{secs .GraceSeconds}} · strikes {{.Strikes}}</p>
<p class="meta">Store {{.Store.Type}}:
{{if .Store.Healthy}}<span class="ok">healthy</span>{{else}}<span class="bad">unhealthy</span>{{end}}
{{if .Store.PingMS}} · PING {{printf "%.1f" .Store.PingMS}} ms{{end}}
{{if .Store.DecidingLocally}} · <span class="warn">deciding locally (fail open)</span>{{end}}
{{if .Store.Capacity}} · {{.Store.Entries}} of {{.Store.Capacity}} identities{{end}}
· bans in force: {{if .Bans.Count}}<span class="bad">{{.Bans.Count}}{{if .Bans.Truncated}}+{{end}}</span>{{else}}0{{end}}
{{if .Store.Error}}<br><span class="err">{{.Store.Error}}</span>{{end}}
{{if .Bans.Error}}<br><span class="err">{{.Bans.Error}}</span>{{end}}</p>
{{if .UntrustedProxy}}<p class="bad" id="untrusted-proxy">Clients arrive through <code>{{.UntrustedProxy}}</code>, which sends X-Forwarded-For or Forwarded but is not a trusted proxy: every client behind it has its address. Set <code>trusted_proxies</code> (and <code>trusted_proxies_strict</code>) in the servers options. Until then, rotation is not judged for that address.</p>{{end}}
{{if .ConfigWarnings}}
<h3>Config warnings</h3>
<ul class="warns">{{range .ConfigWarnings}}<li>{{.}}</li>{{end}}</ul>
{{end}}

<h3>Sites</h3>
{{if .Sites}}
<table class="cards">
<thead><tr><th>Site</th><th>State</th><th>Version</th><th>Age</th><th>Last fetch</th><th>Older versions</th></tr></thead>
<tbody>
{{range .Sites}}
<tr>
<td data-label="Site"><b>{{site .Host}}</b>{{if .Server}}<br><span class="small">{{.Server}}</span>{{end}}</td>
<td data-label="State">{{if eq .State "ok"}}<span class="ok">ok</span>{{else if eq .State "pending"}}<span class="warn">pending</span>{{else}}<span class="bad">{{.State}}</span>{{end}}{{with .PendingChange}}<br><span class="warn">no rules pending confirmation</span><br><span class="small">{{.What}}, seen {{since $now (ptr .Since)}}; confirmed {{next $now (ptr .ConfirmAt)}} if still so</span>{{end}}</td>
<td data-label="Version">{{if .Version}}<code>{{.Version}}</code>{{else}}—{{end}}</td>
<td data-label="Age">{{age .AgeSeconds}}</td>
<td data-label="Last fetch">{{with .Fetch}}{{since $now .Last}}{{if .Result}} · {{if eq .Result "ok"}}<span class="ok">ok</span>{{else}}<span class="bad">{{.Result}}</span>{{end}}{{end}}{{if .Error}}<br><span class="err">{{.Error}}</span>{{end}}{{if .Next}}<br><span class="small">next {{next $now .Next}}</span>{{end}}{{else}}—{{end}}</td>
<td data-label="Older versions">{{if gt (len .Versions) 1}}{{range .Versions}}{{if not .Current}}<code>{{.ID}}</code> <span class="small">replaced {{since $now .Until}}{{if .InGrace}} · <span class="warn">in grace</span>{{end}}</span><br>{{end}}{{end}}{{else}}—{{end}}</td>
</tr>
{{end}}
</tbody>
</table>
{{if .MoreSites}}<p class="small">and {{.MoreSites}} more sites: see /robots/status</p>{{end}}
{{else}}<p class="empty">No site yet: sites appear once a crawler has visited.</p>{{end}}

<h3>Top crawlers</h3>
{{if .TopCrawlers}}
<table class="cards">
<thead><tr><th>Crawler</th><th>Allowed</th><th>Refused</th><th>Refused share</th></tr></thead>
<tbody>
{{range .TopCrawlers}}<tr><td data-label="Crawler"><b>{{.Name}}</b>{{template "claim" .}}</td><td data-label="Allowed">{{.Allowed}}</td><td data-label="Refused">{{.Refused}}</td><td data-label="Refused share"><div class="bar"><i style="width:{{pct .Refused (sum .Allowed .Refused)}}%"></i></div></td></tr>
{{end}}
</tbody>
</table>
{{else}}<p class="empty">No crawler seen yet.</p>{{end}}

<h3>Top offenders</h3>
{{if .TopOffenders}}
<table class="cards">
<thead><tr><th>Crawler</th><th>Refused</th><th>Allowed</th><th>Immediate retries</th></tr></thead>
<tbody>
{{range .TopOffenders}}<tr><td data-label="Crawler"><b>{{.Name}}</b>{{template "claim" .}}</td><td data-label="Refused"><span class="bad">{{.Refused}}</span></td><td data-label="Allowed">{{.Allowed}}</td><td data-label="Retries">{{.Retries}}</td></tr>
{{end}}
</tbody>
</table>
{{else}}<p class="empty">No refusals.</p>{{end}}

{{if .IPLists}}
<h3>Crawler IP lists</h3>
<table class="cards">
<thead><tr><th>Crawlers of</th><th>Verified by</th><th>List age</th><th>Unconfirmed address</th></tr></thead>
<tbody>
{{range .IPLists}}<tr><td data-label="Crawlers of"><b>{{.Method}}</b></td><td data-label="Verified by">{{.VerifiedBy}}</td><td data-label="List age">{{secs .AgeSeconds}}<br><span class="small">as of {{stamp .AsOf}}</span></td><td data-label="Unconfirmed address">{{if .ProvesSpoofs}}<span class="bad">refused as spoofed</span>{{else}}<span class="warn">unverified, not refused</span>{{end}}<br><span class="small">{{.Why}}</span></td></tr>
{{end}}
</tbody>
</table>
{{end}}
</section>
{{end}}

<section>
<h2>Bans in force</h2>
{{range .Bans.Errors}}<p class="err">{{.}}</p>{{end}}
{{if .Bans.Bans}}
<table class="cards">
<thead><tr><th>Crawler</th><th>Network</th><th>Site</th><th>Earned by</th><th>Ends</th><th>Identity</th></tr></thead>
<tbody>
{{range .Bans.Bans}}<tr><td data-label="Crawler"><b>{{if eq .Crawler "*"}}any new name{{else}}{{.Crawler}}{{end}}</b>{{if .Verified}} <span class="small">verified</span>{{end}}{{if eq .Crawler "*"}}<br><span class="small">the address rotates names: every name it has not shown before is banned too</span>{{end}}{{if .Token}}<br><span class="small">judged by <code>User-agent: {{.Token}}</code></span>{{end}}</td><td data-label="Network">{{if .Network}}<code>{{.Network}}</code>{{else}}—{{end}}</td><td data-label="Site">{{site .Site}}{{if .Listen}}<br><span class="small">on {{.Listen}}</span>{{end}}</td><td data-label="Earned by">{{if .EarnedBy}}<b>{{.EarnedBy}}</b><br>{{end}}{{range .Strikes}}<span class="small">line {{.Line}}{{if .Version}} of <code>{{.Version}}</code>{{end}}, {{since $now (ptr .At)}}</span><br>{{else}}{{if not .EarnedBy}}—{{end}}{{end}}</td><td data-label="Ends">{{stamp .Until}}<br><span class="small">{{until $now .Until}} · {{.Reason}}</span></td><td data-label="Identity"><code>{{.Identity}}</code></td></tr>
{{end}}
</tbody>
</table>
<p class="small">Lift a ban: <code>curl -X DELETE {{.Admin}}/robots/bans/&lt;identity, path-escaped&gt;</code>; every ban of an address: <code>curl -X DELETE '{{.Admin}}/robots/bans?address=&lt;ip&gt;'</code>; of a crawler: <code>?crawler=&lt;name&gt;</code>.</p>
{{else}}<p class="empty">No ban in force.</p>{{end}}
</section>
</main>
</body>
</html>
{{define "claim"}}{{if eq .Claim "spoofed"}}<span class="tag bad" title="the address is provably not this crawler's operator's">spoofed</span>{{else if .Claim}}<span class="tag" title="the crawler publishes a way to verify it and these requests were not verified: not the real one as far as anyone can tell">{{.Claim}}</span>{{end}}{{end}}
`))
