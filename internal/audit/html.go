package audit

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// chartCrawlers is how many crawlers get a chart in the HTML report.
const chartCrawlers = 12

// WriteHTML writes the report as one self-contained HTML page: inline CSS,
// inline SVG charts, no script and no external asset. It is laid out for a
// phone first and widens on a desktop.
func (r *Report) WriteHTML(w io.Writer) error {
	type chart struct {
		C   CrawlerReport
		SVG template.HTML
	}
	type site struct {
		H          HostReport
		Crawlers   []CrawlerReport
		Undeclared []CrawlerReport
	}
	var charts []chart
	for _, c := range append(r.Crawler[:len(r.Crawler):len(r.Crawler)], r.UndeclaredCrawlers...) {
		if len(charts) == chartCrawlers {
			break
		}
		if c.Requests == 0 {
			continue
		}
		charts = append(charts, chart{C: c, SVG: template.HTML(r.svg(c))})
	}
	var sites []site
	for _, h := range r.Hosts {
		sites = append(sites, site{H: h, Crawlers: r.crawlersOf(h.Host), Undeclared: r.undeclaredOf(h.Host)})
	}
	if len(sites) == 0 {
		sites = []site{{}}
	}
	var byRule, throttled, banned, spoofed, newly, conflicts int64
	for _, c := range r.Crawler {
		byRule += c.RefusedRule
		throttled += c.Throttled
		banned += c.Banned
		spoofed += c.Spoofed
		newly += c.NewlyRefused
		conflicts += c.PreferenceConflicts
	}
	var undeclaredRefused int64
	for _, c := range r.UndeclaredCrawlers {
		undeclaredRefused += c.Refused - c.RefusedLogMode
	}
	cards := 5
	if r.Preferences {
		cards++
	}
	if r.Undeclared > 0 {
		cards++
	}
	data := map[string]any{
		"R": r, "Charts": charts, "Sites": sites, "Split": r.Split(),
		"ByRule": byRule, "Throttled": throttled, "Banned": banned, "Spoofed": spoofed, "Newly": newly, "Conflicts": conflicts,
		"PrefsEnforced": r.Options.Preferences == "enforce",
		"NewPrefs":      r.Preview && r.PreferencesNew, "Step": fmtStep(r.SeriesStep),
		"Others": otherReasons,
		// Undeclared crawlers: in the lists of refusals with the declared
		// ones, and a card of their own.
		"All":      append(r.Crawler[:len(r.Crawler):len(r.Crawler)], r.UndeclaredCrawlers...),
		"SixCards": cards >= 6, "UndeclaredRefused": undeclaredRefused,
	}
	if err := htmlPage.Execute(w, data); err != nil {
		return fmt.Errorf("writing HTML report: %w", err)
	}
	return nil
}

func fmtStep(d time.Duration) string {
	switch {
	case d == 0:
		return ""
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d d", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%d h", d/time.Hour)
	}
	return fmt.Sprintf("%d min", d/time.Minute)
}

// svg draws the requests (grey-blue) and refusals (red) of c over time
// as bars, one per series bucket that holds data.
func (r *Report) svg(c CrawlerReport) string {
	const w, h, top, bottom = 320.0, 110.0, 14.0, 18.0
	n := len(c.SeriesRequests)
	lo, hi := n, -1
	var peak int64
	for i := range n {
		if c.SeriesRequests[i] > 0 {
			lo, hi = min(lo, i), max(hi, i)
			peak = max(peak, c.SeriesRequests[i])
		}
	}
	// Show the whole audited period, not only this crawler's.
	if r.SeriesStep > 0 && !r.First.IsZero() {
		lo = min(lo, int(r.First.Sub(r.SeriesStart)/r.SeriesStep))
		hi = max(hi, int(r.Last.Sub(r.SeriesStart)/r.SeriesStep))
	}
	lo, hi = max(lo, 0), min(hi, n-1)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %g %g" role="img" aria-label="requests and refusals of %s over time">`, w, h, template.HTMLEscapeString(c.Name))
	if hi < lo || peak == 0 {
		b.WriteString(`<text x="4" y="60" class="ax">no timestamps</text></svg>`)
		return b.String()
	}
	cols := hi - lo + 1
	bw := w / float64(cols)
	plot := h - top - bottom
	fmt.Fprintf(&b, `<line x1="0" y1="%g" x2="%g" y2="%g" class="base"/>`, h-bottom, w, h-bottom)
	for i := lo; i <= hi; i++ {
		x := float64(i-lo) * bw
		gap := min(1.0, bw/4)
		if v := c.SeriesRequests[i]; v > 0 {
			bh := max(1, plot*float64(v)/float64(peak))
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="req"><title>%d requests</title></rect>`,
				x+gap/2, h-bottom-bh, bw-gap, bh, v)
		}
		if v := c.SeriesRefused[i]; v > 0 {
			bh := max(1, plot*float64(v)/float64(peak))
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="viol"><title>%d refused</title></rect>`,
				x+gap/2, h-bottom-bh, bw-gap, bh, v)
		}
	}
	start := r.SeriesStart.Add(time.Duration(lo) * r.SeriesStep)
	end := r.SeriesStart.Add(time.Duration(hi+1) * r.SeriesStep)
	fmt.Fprintf(&b, `<text x="0" y="10" class="ax">peak %d per %s</text>`, peak, fmtStep(r.SeriesStep))
	fmt.Fprintf(&b, `<text x="0" y="%g" class="ax">%s</text>`, h-4, start.Format("Jan 2 15:04"))
	fmt.Fprintf(&b, `<text x="%g" y="%g" class="ax" text-anchor="end">%s</text>`, w, h-4, end.Format("Jan 2 15:04"))
	b.WriteString(`</svg>`)
	return b.String()
}

var htmlPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"t":             fmtTime,
	"host":          HostLabel,
	"plural":        plural,
	"times":         times,
	"throttled":     func(c CrawlerReport) string { return throttledCell(&c) },
	"signals":       signalsCell,
	"refusedClaims": func(c CrawlerReport) bool { return claimsText(&c) != nil },
	"enforced":      func(c CrawlerReport) int64 { return c.Refused - c.RefusedLogMode },
	"secs":          func(s Seconds) string { return shortDuration(time.Duration(s)) },
	"other": func(c CrawlerReport, r policy.Reason) int64 {
		return c.RefusedOther[r.String()]
	},
	"pct": func(a, b int64) string {
		if b == 0 {
			return "0%"
		}
		return fmt.Sprintf("%.0f%%", 100*float64(a)/float64(b))
	},
}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>robots.txt audit</title>
<style>
:root { --fg:#1b1f24; --muted:#5b6570; --line:#d8dee4; --req:#4a78b5; --viol:#d0312d; --bg:#fff; --card:#f6f8fa; --warn:#b35900; }
* { box-sizing: border-box; }
body { margin:0; font:16px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; color:var(--fg); background:var(--bg); }
main { max-width:1240px; margin:0 auto; padding:16px; }
h1 { font-size:1.4rem; margin:0 0 4px; }
h2 { font-size:1.15rem; margin:28px 0 8px; }
.meta { color:var(--muted); font-size:.9rem; margin:0; }
.meta code { word-break:break-all; }
.cards { display:grid; grid-template-columns:repeat(2,1fr); gap:10px; margin:16px 0; }
.card { background:var(--card); border-radius:10px; padding:10px 12px; }
.card b { display:block; font-size:1.5rem; }
.card span { color:var(--muted); font-size:.85rem; }
.card.bad b { color:var(--viol); }
.card.warn b { color:var(--warn); }
.scroll { overflow-x:auto; -webkit-overflow-scrolling:touch; }
table { border-collapse:separate; border-spacing:0; width:100%; font-size:.9rem; }
th, td { text-align:right; padding:6px 8px; border-bottom:1px solid var(--line); white-space:nowrap; }
th:first-child, td:first-child { text-align:left; position:sticky; left:0; background:var(--bg); }
th { font-size:.8rem; color:var(--muted); font-weight:600; white-space:normal; vertical-align:bottom; }
td.wrap { white-space:normal; }
td.when { white-space:normal; min-width:6.5em; }
th.l, td.l { text-align:left; }
td.addrs { white-space:normal; text-align:left; min-width:14em; }
td.addrs code { white-space:nowrap; }
td.bad { color:var(--viol); font-weight:600; }
td.warn { color:var(--warn); font-weight:600; }
.charts { display:grid; grid-template-columns:1fr; gap:12px; }
.chart { background:var(--card); border-radius:10px; padding:10px 12px; }
.chart h3 { font-size:1rem; margin:0 0 2px; }
.chart p { margin:0 0 6px; color:var(--muted); font-size:.85rem; }
svg { width:100%; height:auto; display:block; }
svg .req { fill:var(--req); }
svg .viol { fill:var(--viol); }
svg .base { stroke:var(--line); stroke-width:1; }
svg .ax { font-size:10px; fill:var(--muted); }
.legend { font-size:.85rem; color:var(--muted); }
.legend i { display:inline-block; width:10px; height:10px; border-radius:2px; margin:0 4px 0 10px; vertical-align:-1px; }
ul { padding-left:20px; }
li { margin:4px 0; word-break:break-word; }
code { font-size:.85rem; background:var(--card); padding:1px 4px; border-radius:4px; }
@media (min-width:700px) {
  .cards { grid-template-columns:repeat(5,1fr); }
  .cards.six { grid-template-columns:repeat(3,1fr); }
  .charts { grid-template-columns:repeat(2,1fr); }
}
</style>
</head>
<body>
<main>
<h1>robots.txt audit</h1>
<p class="meta">Rules: <code>{{.R.Robots}}</code>{{if .R.RobotsNew}} · preview: <code>{{.R.RobotsNew}}</code>{{end}}</p>
<p class="meta">Period: {{t .R.First}} to {{t .R.Last}} UTC · {{.R.Lines}} requests in {{len .R.Logs}} log file(s){{range $f, $n := .R.Formats}} · {{$f}} {{$n}}{{end}}</p>
<p class="meta">Options: {{.R.Options}}</p>
{{if .R.Own}}<p class="meta">This plugin's own requests: {{.R.Own}} (its robots.txt loader and command line; not crawlers)</p>
{{end}}{{if eq .R.Options.Mode "log"}}<p class="meta">Mode log: the handler refuses nothing; the counts say what mode enforce would have refused.</p>
{{end}}
<div class="cards{{if .SixCards}} six{{end}}">
<div class="card"><b>{{.R.Crawlers}}</b><span>crawler requests ({{pct .R.Crawlers .R.Lines}} of all)</span></div>
<div class="card{{if .ByRule}} bad{{end}}"><b>{{.ByRule}}</b><span>refused by a rule</span></div>
<div class="card{{if .Throttled}} bad{{end}}"><b>{{.Throttled}}</b><span>throttled (Crawl-delay)</span></div>
<div class="card{{if .Banned}} bad{{end}}"><b>{{.Banned}}</b><span>refused while banned</span></div>
<div class="card{{if .Spoofed}} bad{{end}}"><b>{{.Spoofed}}</b><span>spoofed claims</span></div>
{{if .R.Preferences}}<div class="card{{if .Conflicts}} warn{{end}}"><b>{{.Conflicts}}</b><span>{{if .PrefsEnforced}}refused by AI usage preferences{{else}}conflicts with AI usage preferences{{end}}</span></div>
{{end}}{{if .R.Undeclared}}<div class="card{{if .UndeclaredRefused}} bad{{end}}"><b>{{.R.Undeclared}}</b><span>undeclared crawler requests ({{.UndeclaredRefused}} refused)</span></div>
{{end}}</div>
{{range .Sites}}
<h2>{{if $.Split}}{{host .H.Host}}: {{.H.Requests}} requests{{else}}Crawlers{{end}}</h2>
<div class="scroll">
<table>
<thead><tr><th>Crawler</th><th>Requests</th><th>By rule</th>{{if $.R.Preferences}}<th>{{if $.PrefsEnforced}}By preference{{else}}Pref. conflicts{{end}}</th>{{end}}<th>Throttled</th><th>Banned</th><th>Strikes</th><th>Spoofed</th><th>robots.txt</th>{{if $.R.Preview}}<th>Newly refused</th>{{end}}{{if $.NewPrefs}}<th>Newly conflicting</th>{{end}}<th>First seen</th><th>Last seen</th></tr></thead>
<tbody>
{{range .Crawlers}}<tr><td>{{.Name}}</td><td>{{.Requests}}</td><td{{if .RefusedRule}} class="bad"{{end}}>{{.RefusedRule}}</td>{{if $.R.Preferences}}<td{{if .PreferenceConflicts}} class="warn"{{end}}>{{if $.PrefsEnforced}}{{.RefusedPreference}}{{else}}{{.PreferenceConflicts}}{{end}}</td>{{end}}<td{{if .Throttled}} class="bad"{{end}}>{{throttled .}}</td><td{{if .Banned}} class="bad"{{end}}>{{.Banned}}</td><td{{if .Strikes}} class="bad"{{end}}>{{.Strikes}}</td><td{{if .Spoofed}} class="bad"{{end}}>{{.Spoofed}}</td><td>{{if .FetchedRobotsTxt}}yes ({{.RobotsTxtFetches}}){{else}}no{{end}}</td>{{if $.R.Preview}}<td{{if .NewlyRefused}} class="bad"{{end}}>{{.NewlyRefused}}</td>{{end}}{{if $.NewPrefs}}<td{{if .NewlyConflicting}} class="warn"{{end}}>{{.NewlyConflicting}}</td>{{end}}<td class="when">{{t .First}}</td><td class="when">{{t .Last}}</td></tr>
{{end}}</tbody>
</table>
</div>
{{if .Undeclared}}<h2>Undeclared crawlers{{if $.Split}}: {{host .H.Host}}{{end}}</h2>
<p class="meta">Browser User-Agents that a signal showed to be programs, judged by the "*" group. Log mode: judged by a signal in log mode (or the handler's mode log), refused by nothing: what enforce would refuse.</p>
<div class="scroll">
<table>
<thead><tr><th>Undeclared crawler</th><th>Requests</th><th>Refused</th><th>Log mode</th><th>By rule</th><th>Throttled</th><th>Banned</th><th>Strikes</th><th>Trap</th><th>Signals</th><th>First seen</th><th>Last seen</th></tr></thead>
<tbody>
{{range .Undeclared}}{{$e := enforced .}}<tr><td>{{.Name}}</td><td>{{.Requests}}</td><td{{if $e}} class="bad"{{end}}>{{$e}}</td><td{{if .RefusedLogMode}} class="warn"{{end}}>{{.RefusedLogMode}}</td><td{{if .RefusedRule}} class="bad"{{end}}>{{.RefusedRule}}</td><td{{if .Throttled}} class="bad"{{end}}>{{throttled .}}</td><td{{if .Banned}} class="bad"{{end}}>{{.Banned}}</td><td{{if .Strikes}} class="bad"{{end}}>{{.Strikes}}</td><td>{{.TrapRequests}}{{if .TrapProbation}} ({{.TrapProbation}} probation){{end}}</td><td class="wrap">{{signals .Signals}}</td><td class="when">{{t .First}}</td><td class="when">{{t .Last}}</td></tr>
{{end}}</tbody>
</table>
</div>
{{end}}{{end}}<p class="meta">Throttled: 503 for coming faster than the Crawl-delay allows (crawl_burst {{.R.Options.CrawlBurst}}); off: its group's Crawl-delay is not enforced on it (* documented to ignore Crawl-delay); – : none applies. Banned: refused after repeated strikes (strikes {{.R.Options.Strikes}}).{{if and .R.Preferences (not .PrefsEnforced)}} Conflicts: requests the rules allow for which the AI usage preference (Content-Usage, Content-Signal) refuses the crawler's documented purpose: preferences enforce would refuse them.{{end}}</p>
{{with .R.UndeclaredSignals}}<h2>Signals of undeclared crawlers</h2>
<div class="scroll">
<table>
<thead><tr><th>Signal</th><th>Mode</th><th>Requests</th><th>Refused</th><th>Enforce would refuse</th><th>Trap requests</th></tr></thead>
<tbody>
{{range .Signals}}<tr><td>{{.Signal}}</td><td>{{.Mode}}</td><td>{{.Requests}}</td><td{{if .Refused}} class="bad"{{end}}>{{.Refused}}</td><td{{if .WouldRefuse}} class="warn"{{end}}>{{.WouldRefuse}}</td><td>{{.TrapRequests}}{{if .Probation}} ({{.Probation}} probation){{end}}</td></tr>
{{end}}</tbody>
</table>
</div>
<p class="meta">{{if .Trap}}Trap <code>{{.Trap}}</code>, hold {{secs .TrapHold}}. {{end}}The header rule (fetch_metadata, fetch_metadata_safari, client_hints) read {{plural .HeaderLines "line"}} that record the request's headers (Caddy's JSON){{if .NoHeaderLines}}; {{plural .NoHeaderLines "line"}} of the Combined or Common Log Format record none: only the trap applies to them{{end}}.{{if .TLSLines}} The tls signal read {{plural .TLSLines "line"}} that carry the client's TLS fingerprint.{{end}}</p>
{{if .Fingerprints}}<h2>The tls signal, by handshake</h2>
<div class="scroll">
<table>
<thead><tr><th class="l">Fingerprint</th><th>Engine</th><th>Claims</th>{{if $.Split}}<th class="l">Host</th>{{end}}<th>Requests</th><th>Refused</th><th>Enforce would refuse</th><th class="l">Addresses</th><th>First seen</th><th>Last seen</th></tr></thead>
<tbody>
{{range .Fingerprints}}<tr><td class="l"><code>{{.Fingerprint}}</code></td><td>{{.Engine}}</td><td>{{.Claims}}</td>{{if $.Split}}<td class="l">{{host .Host}}</td>{{end}}<td>{{.Requests}}</td><td{{if .Refused}} class="bad"{{end}}>{{.Refused}}</td><td{{if .WouldRefuse}} class="warn"{{end}}>{{.WouldRefuse}}</td><td class="addrs">{{.AddressesText}}</td><td class="when">{{t .First}}</td><td class="when">{{t .Last}}</td></tr>
{{end}}</tbody>
</table>
</div>
<p class="meta">Requests whose User-Agent claims a browser over a TLS handshake that an HTTP library made (or that the claimed version could not have made), judged by the "*" group. Enforce would refuse: what the signal in log mode let through and enforce would refuse. A person behind a proxy that inspects TLS shows up here too: read this list before turning the signal to enforce.</p>
{{end}}{{end}}
<h2>Over time</h2>
<p class="legend"><i style="background:var(--req)"></i>requests<i style="background:var(--viol)"></i>refused (any reason) · one bar per {{.Step}}</p>
<div class="charts">
{{range .Charts}}<div class="chart"><h3>{{.C.Name}}{{if $.Split}} · {{host .C.Host}}{{end}}</h3><p>{{.C.Requests}} requests · {{.C.RefusedRule}} by rule · {{.C.Throttled}} throttled · {{.C.Banned}} banned{{if .C.Operator}} · {{.C.Operator}}{{end}}</p>{{.SVG}}</div>
{{end}}</div>

{{$rules := false}}{{range .All}}{{if .Rules}}{{$rules = true}}{{end}}{{end}}
{{if $rules}}<h2>Rules broken</h2>
<ul>
{{range .All}}{{$c := .}}{{range .Rules}}<li><b>{{$c.Name}}</b>{{if $.Split}} ({{host $c.Host}}){{end}}: {{.Requests}} × <code>{{.Rule}}</code></li>
{{end}}{{end}}</ul>{{end}}

{{$other := false}}{{range .All}}{{if or .RefusedOther .Bans .Banned}}{{$other = true}}{{end}}{{end}}{{if $other}}<h2>Other refusals</h2>
<ul>
{{range .All}}{{$c := .}}{{range $.Others}}{{$n := other $c .Reason}}{{if $n}}<li><b>{{$c.Name}}</b>: {{$n}} × {{.Text}}</li>
{{end}}{{end}}{{if or .Bans .Banned}}<li><b>{{.Name}}</b>: banned {{times .Bans}} after {{plural .Strikes "strike"}}; {{plural .Banned "request"}} refused while banned</li>
{{end}}{{end}}</ul>
{{end}}
{{$claims := false}}{{range .All}}{{if refusedClaims .}}{{$claims = true}}{{end}}{{end}}{{if $claims}}<h2>Refusals by claim</h2>
<p class="meta">A crawler's judged requests split by what verifying its claim found (the published IP lists; no DNS): verified, unverified, or spoofed (an address the operator's list provably excludes). One fake's refusals and bans are not the real crawler's.</p>
<div class="scroll">
<table>
<thead><tr><th>Crawler</th><th class="l">Claim</th><th>Requests</th><th>Refused</th><th>While banned</th><th>Bans</th><th class="l">Addresses behind them</th></tr></thead>
<tbody>
{{range .All}}{{$c := .}}{{if refusedClaims .}}{{range .Claims}}<tr><td>{{$c.Name}}{{if $.Split}} ({{host $c.Host}}){{end}}</td><td class="l">{{.Verdict}}</td><td>{{.Requests}}</td><td{{if .Refused}} class="bad"{{end}}>{{.Refused}}</td><td{{if .Banned}} class="bad"{{end}}>{{.Banned}}</td><td{{if .Bans}} class="bad"{{end}}>{{.Bans}}</td><td class="addrs">{{.Addresses}}</td></tr>
{{end}}{{end}}{{end}}</tbody>
</table>
</div>
{{end}}
{{$prefs := false}}{{range .R.Crawler}}{{if .PreferenceRefusals}}{{$prefs = true}}{{end}}{{end}}{{if $prefs}}<h2>AI usage preferences {{if .PrefsEnforced}}that refused{{else}}that would refuse{{end}}</h2>
<ul>
{{range .R.Crawler}}{{$c := .}}{{range .PreferenceRefusals}}<li><b>{{$c.Name}}</b>{{if $c.Purpose}} ({{$c.Purpose}}){{end}}: {{.Requests}} × <code>{{.Refusal}}</code></li>
{{end}}{{end}}</ul>

{{end}}{{if .R.Preview}}<h2>What the new robots.txt would change</h2>
<ul>
{{range .R.Crawler}}{{if or .NewlyRefused .NewlyAllowed .NewlyConflicting}}<li><b>{{.Name}}</b>: {{.NewlyRefused}} newly refused, {{.NewlyAllowed}} newly allowed{{if $.NewPrefs}}, {{.NewlyConflicting}} newly conflicting{{end}}{{if .NewlyRefusedSample}}; e.g. {{range .NewlyRefusedSample}}<code>{{.}}</code> {{end}}{{end}}{{range .NewlyConflictingRefusals}}; {{.Requests}} × <code>{{.Refusal}}</code>{{end}}</li>
{{end}}{{end}}</ul>{{end}}

{{range .R.Notes}}<p class="meta">Note: {{.}}</p>{{end}}
</main>
</body>
</html>
`))
