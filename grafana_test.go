package caddyrobots

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// The Grafana dashboard in examples/grafana reads the module's metrics by
// name. These tests hold it to what the module exports: every family and
// label a query names exists, and every family the module exports has a
// panel.

const dashboardPath = "examples/grafana/caddy-robots.json"

// targetLabels are the labels Prometheus adds to every scraped series.
var targetLabels = []string{"instance", "job"}

// capturingRegisterer records the collectors registered with it.
type capturingRegisterer struct{ cs []prometheus.Collector }

func (c *capturingRegisterer) Register(x prometheus.Collector) error {
	c.cs = append(c.cs, x)
	return nil
}

func (c *capturingRegisterer) MustRegister(xs ...prometheus.Collector) { c.cs = append(c.cs, xs...) }

func (c *capturingRegisterer) Unregister(prometheus.Collector) bool { return false }

// describedOnly collects one series per descriptor of the collectors it
// wraps, so that a registry's Gather shows every family with its label
// names, counted or not.
type describedOnly struct{ descs []*prometheus.Desc }

func (d describedOnly) Describe(ch chan<- *prometheus.Desc) {
	for _, desc := range d.descs {
		ch <- desc
	}
}

func (d describedOnly) Collect(ch chan<- prometheus.Metric) {
	for _, desc := range d.descs {
		// The number of variable labels is not exported: try until the
		// descriptor accepts the values.
		for n := 0; n <= 16; n++ {
			if m, err := prometheus.NewConstMetric(desc, prometheus.UntypedValue, 0, make([]string, n)...); err == nil {
				ch <- m
				break
			}
		}
	}
}

// exportedFamilies returns the metric families the module registers (in
// Provision: registerMetrics for the handler, registerRangesMetrics for
// the IP lists) with their label names.
func exportedFamilies(t *testing.T) map[string][]string {
	t.Helper()
	var reg capturingRegisterer
	if err := registerMetrics(&reg); err != nil {
		t.Fatal(err)
	}
	if err := registerRangesMetrics(&reg); err != nil {
		t.Fatal(err)
	}
	var all describedOnly
	for _, c := range reg.cs {
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			all.descs = append(all.descs, d)
		}
	}
	fresh := prometheus.NewPedanticRegistry()
	if err := fresh.Register(all); err != nil {
		t.Fatal(err)
	}
	mfs, err := fresh.Gather()
	if err != nil {
		t.Fatal(err)
	}
	fams := map[string][]string{}
	for _, mf := range mfs {
		var labels []string
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName())
			}
		}
		fams[mf.GetName()] = labels
	}
	if len(fams) != len(all.descs) {
		t.Fatalf("%d descriptors gave %d families", len(all.descs), len(fams))
	}
	return fams
}

// knownLabelValues are the values some labels can take, from the tables
// the collectors export: a query matching another value shows nothing.
func knownLabelValues() map[string]map[string][]string {
	var actions, reasons, categories, allActions []string
	for _, k := range decisionKinds {
		reasons = append(reasons, reasonLabel(k.reason))
	}
	reasons = append(reasons, "other") // a pair of action and reason not among decisionKinds
	for a := range policy.Actions {
		actions = append(actions, policy.Action(a).String())
	}
	for _, c := range categoryNames {
		categories = append(categories, string(c))
	}
	for a := range policy.Actions {
		allActions = append(allActions, policy.Action(a).String())
	}
	set := func(vs []string) []string {
		vs = slices.Clone(vs)
		slices.Sort(vs)
		return slices.Compact(vs)
	}
	actions, reasons, categories, allActions = set(actions), set(reasons), set(categories), set(allActions)
	return map[string]map[string][]string{
		"caddy_robots_decisions_total": {
			"action": actions, "reason": reasons, "category": categories, "mode": {"enforce", "log"},
		},
		"caddy_robots_purpose_decisions_total": {
			"purpose": purposeNames[:], "action": allActions,
		},
		"caddy_robots_immediate_retries_total": {"mode": {"enforce", "log"}},
	}
}

type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	Description   string  `json:"description"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
			Datasource *datasourceRef  `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID          int            `json:"id"`
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Datasource  *datasourceRef `json:"datasource"`
	GridPos     struct{ H, W, X, Y int }
	Targets     []struct {
		RefID        string         `json:"refId"`
		Expr         string         `json:"expr"`
		LegendFormat string         `json:"legendFormat"`
		Datasource   *datasourceRef `json:"datasource"`
	} `json:"targets"`
	Options struct {
		Content string `json:"content"`
	} `json:"options"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// TestDashboardShape checks what Grafana 10+ needs to import the
// dashboard and what it promises: a Prometheus datasource variable every
// query uses, panel ids unique, panels inside the 24-column grid, and the
// per-crawler text panel with the admin API command.
func TestDashboardShape(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: both needed", d.UID, d.Title)
	}
	if d.SchemaVersion < 36 { // Grafana 10.0's schema
		t.Errorf("schemaVersion %d: Grafana 10 dashboards have 36 or more", d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" {
		t.Errorf("no datasource variable: the importer could not pick the Prometheus to read")
	}
	ids := map[int]string{}
	rows := map[int][]panel{} // non-row panels by y, to check overlaps
	var texts []panel
	for _, p := range allPanels(d.Panels) {
		if prev, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("panel %q: id %d (also %q)", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
		}
		for _, o := range rows[g.Y] {
			if g.X < o.GridPos.X+o.GridPos.W && o.GridPos.X < g.X+g.W {
				t.Errorf("panels %q and %q overlap", p.Title, o.Title)
			}
		}
		rows[g.Y] = append(rows[g.Y], p)
		switch p.Type {
		case "row":
			continue
		case "text":
			texts = append(texts, p)
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || p.Datasource.Type != "prometheus" {
			t.Errorf("panel %q: datasource %+v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		if p.Description == "" {
			t.Errorf("panel %q has no description", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" {
				t.Errorf("panel %q: a target without expr or refId", p.Title)
			}
			if tg.Datasource != nil && tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: target datasource %+v", p.Title, tg.Datasource)
			}
		}
	}
	// Per-crawler figures are not metrics: a text panel says where they are.
	found := false
	for _, p := range texts {
		c := p.Options.Content
		if strings.Contains(c, "curl -s localhost:2019/robots/status") && strings.Contains(c, ".handlers[].top_offenders[]") {
			found = true
		}
	}
	if !found {
		t.Error("no text panel with the /robots/status command for the top refused crawlers")
	}
	if !strings.Contains(d.Description, "text panel") || !strings.Contains(d.Description, "Infinity") {
		t.Errorf("the description should say the top-crawlers panel is text and why not Infinity: %q", d.Description)
	}
}

// TestDashboardQueriesUseExportedMetrics: each PromQL query of the
// dashboard names only metric families the module exports, with labels
// those families have (or the scrape's instance and job), label values
// the collectors produce, rate and increase only over counters; each
// legend names a label the query keeps; and every family the module
// exports is on some panel.
func TestDashboardQueriesUseExportedMetrics(t *testing.T) {
	fams := exportedFamilies(t)
	if _, ok := fams["caddy_robots_decisions_total"]; !ok {
		t.Fatalf("exported families %v lack caddy_robots_decisions_total: the collection is broken", fams)
	}
	values := knownLabelValues()
	d := loadDashboard(t)
	used := map[string]bool{}
	check := func(where, expr, legend string) {
		q, err := parsePromQL(expr)
		if err != nil {
			t.Errorf("%s: %q: %v", where, expr, err)
			return
		}
		if len(q.selectors) == 0 {
			t.Errorf("%s: %q names no metric", where, expr)
		}
		famLabels := map[string]bool{}
		for _, s := range q.selectors {
			labels, ok := fams[s.metric]
			if !ok {
				t.Errorf("%s: %q: the module exports no metric %s (it exports %s)", where, expr, s.metric, strings.Join(sortedKeys(fams), ", "))
				continue
			}
			used[s.metric] = true
			for _, l := range labels {
				famLabels[l] = true
			}
			if s.counterFunc != "" && !strings.HasSuffix(s.metric, "_total") {
				t.Errorf("%s: %s() over %s, which is not a counter", where, s.counterFunc, s.metric)
			}
			if s.counterFunc == "" && strings.HasSuffix(s.metric, "_total") {
				t.Errorf("%s: the counter %s read without rate() or increase()", where, s.metric)
			}
			for _, m := range s.matchers {
				if !slices.Contains(labels, m.label) && !slices.Contains(targetLabels, m.label) {
					t.Errorf("%s: %s has no label %q (it has %v)", where, s.metric, m.label, labels)
					continue
				}
				known, ok := values[s.metric][m.label]
				if !ok || strings.HasPrefix(m.value, "$") {
					continue
				}
				for _, v := range matcherValues(m) {
					if !slices.Contains(known, v) {
						t.Errorf("%s: %s{%s%s%q}: %q is not a value of %s (values: %v)", where, s.metric, m.label, m.op, m.value, v, m.label, known)
					}
				}
			}
		}
		for _, l := range q.groupLabels {
			if !famLabels[l] && !slices.Contains(targetLabels, l) {
				t.Errorf("%s: %q groups by %q, a label none of its metrics has", where, expr, l)
			}
		}
		for _, m := range regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`).FindAllStringSubmatch(legend, -1) {
			l := m[1]
			if q.aggregates && !slices.Contains(q.groupLabels, l) {
				t.Errorf("%s: legend %q names %q, which the aggregation %q drops", where, legend, l, expr)
			} else if !famLabels[l] && !slices.Contains(targetLabels, l) {
				t.Errorf("%s: legend %q names %q, a label of none of its metrics", where, legend, l)
			}
		}
	}
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			check(fmt.Sprintf("panel %q %s", p.Title, tg.RefID), tg.Expr, tg.LegendFormat)
		}
	}
	// Variables: label_values(metric, label) is Grafana's, not PromQL.
	labelValues := regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*(\w+)\s*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: definition %q is not label_values(metric, label)", v.Name, v.Definition)
			continue
		}
		if !strings.Contains(string(v.Query), v.Definition) {
			t.Errorf("variable %s: query %s differs from its definition %q", v.Name, v.Query, v.Definition)
		}
		labels, ok := fams[m[1]]
		if !ok {
			t.Errorf("variable %s: no metric %s", v.Name, m[1])
		} else if !slices.Contains(labels, m[2]) && !slices.Contains(targetLabels, m[2]) {
			t.Errorf("variable %s: %s has no label %s", v.Name, m[1], m[2])
		}
	}
	for _, f := range sortedKeys(fams) {
		if !used[f] {
			t.Errorf("the module exports %s but no panel of %s shows it: add one", f, dashboardPath)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// matcherValues returns the values a matcher names: its value, or for a
// regular expression the alternatives of a plain a|b|c.
func matcherValues(m labelMatcher) []string {
	if m.op == "=~" || m.op == "!~" {
		return strings.Split(m.value, "|")
	}
	return []string{m.value}
}

// A small reader for the PromQL the dashboard writes: selectors with their
// matchers, the function that reads each, and the labels of by (...)
// clauses. It rejects what it does not know rather than guess.

type labelMatcher struct{ label, op, value string }

type vectorSelector struct {
	metric      string
	matchers    []labelMatcher
	counterFunc string // rate, increase, irate or "" for the function reading the selector
}

type promQuery struct {
	selectors   []vectorSelector
	groupLabels []string // labels of by (...) clauses
	aggregates  bool     // an aggregation operator at the top
}

var promFuncs = map[string]bool{
	"sum": true, "max": true, "min": true, "avg": true, "count": true, "topk": true, "bottomk": true,
	"rate": true, "increase": true, "irate": true, "sort_desc": true, "sort": true,
	"clamp_min": true, "clamp_max": true, "max_over_time": true, "min_over_time": true,
	"avg_over_time": true, "time": true, "vector": true, "abs": true, "round": true,
}

var promAggregations = map[string]bool{"sum": true, "max": true, "min": true, "avg": true, "count": true, "topk": true, "bottomk": true}

var promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true}

var counterFuncs = map[string]bool{"rate": true, "increase": true, "irate": true}

type promToken struct {
	kind string // ident, string, number, var, punct
	text string
}

func lexPromQL(s string) ([]promToken, error) {
	var toks []promToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			toks = append(toks, promToken{"string", s[i+1 : j]})
			i = j + 1
		case c == '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unterminated range at %d", i)
			}
			toks = append(toks, promToken{"range", s[i+1 : i+j]})
			i += j + 1
		case c == '$':
			j := i + 1
			for j < len(s) && (isIdentByte(s[j]) || s[j] == '{' || s[j] == '}') {
				j++
			}
			toks = append(toks, promToken{"var", s[i:j]})
			i = j
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e') {
				j++
			}
			toks = append(toks, promToken{"number", s[i:j]})
			i = j
		case isIdentByte(c):
			j := i
			for j < len(s) && (isIdentByte(s[j]) || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			toks = append(toks, promToken{"ident", s[i:j]})
			i = j
		default:
			op := string(c)
			if i+1 < len(s) {
				if two := s[i : i+2]; two == "=~" || two == "!=" || two == "!~" || two == "==" || two == ">=" || two == "<=" {
					op = two
				}
			}
			if !strings.Contains("(){},=!~+-*/<>^%", op[:1]) {
				return nil, fmt.Errorf("unexpected %q at %d", op, i)
			}
			toks = append(toks, promToken{"punct", op})
			i += len(op)
		}
	}
	return toks, nil
}

func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':'
}

func parsePromQL(expr string) (promQuery, error) {
	toks, err := lexPromQL(expr)
	if err != nil {
		return promQuery{}, err
	}
	var q promQuery
	next := func(i int) promToken {
		if i+1 < len(toks) {
			return toks[i+1]
		}
		return promToken{}
	}
	// pending holds the counter function whose argument is the next
	// selector.
	pending := ""
	sawFunc := false // the outermost function (sort aside) was seen
	for i := 0; i < len(toks); i++ {
		tk := toks[i]
		if tk.kind != "ident" {
			if tk.kind == "punct" && tk.text == "{" {
				return q, fmt.Errorf("a selector without a metric name")
			}
			continue
		}
		switch {
		case tk.text == "by" || tk.text == "without":
			if tk.text == "without" {
				return q, fmt.Errorf("without (...) is not supported here: name the labels kept with by (...)")
			}
			if next(i).text != "(" {
				return q, fmt.Errorf("by without a label list")
			}
			i += 2
			for ; i < len(toks) && toks[i].text != ")"; i++ {
				if toks[i].kind == "ident" {
					q.groupLabels = append(q.groupLabels, toks[i].text)
				}
			}
		case next(i).text == "(" || promAggregations[tk.text] && (next(i).text == "by" || next(i).text == "without"):
			if !promFuncs[tk.text] {
				return q, fmt.Errorf("unknown function %s", tk.text)
			}
			if !sawFunc && tk.text != "sort" && tk.text != "sort_desc" {
				sawFunc = true
				q.aggregates = promAggregations[tk.text]
			}
			if counterFuncs[tk.text] {
				pending = tk.text
			}
		case promKeywords[tk.text]:
		default:
			s := vectorSelector{metric: tk.text, counterFunc: pending}
			pending = ""
			if next(i).text == "{" {
				i += 2
				for ; i < len(toks) && toks[i].text != "}"; i++ {
					if toks[i].text == "," {
						continue
					}
					if i+2 >= len(toks) || toks[i].kind != "ident" || toks[i+1].kind != "punct" || toks[i+2].kind != "string" {
						return q, fmt.Errorf("a matcher of %s is not label op \"value\"", tk.text)
					}
					s.matchers = append(s.matchers, labelMatcher{toks[i].text, toks[i+1].text, toks[i+2].text})
					i += 2
				}
				if i >= len(toks) {
					return q, fmt.Errorf("the matchers of %s are not closed", tk.text)
				}
			}
			q.selectors = append(q.selectors, s)
		}
	}
	return q, nil
}

// TestParsePromQL: the reader above finds what it must, and refuses what
// it cannot read, so the dashboard test cannot pass by misreading.
func TestParsePromQL(t *testing.T) {
	q, err := parsePromQL(`sort_desc(sum by (purpose, action) (increase(caddy_robots_purpose_decisions_total{instance=~"$instance", action=~"block|ban"}[$__range]))) / max(caddy_robots_rules_age_seconds)`)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.selectors) != 2 || q.selectors[0].metric != "caddy_robots_purpose_decisions_total" || q.selectors[0].counterFunc != "increase" ||
		q.selectors[1].metric != "caddy_robots_rules_age_seconds" || q.selectors[1].counterFunc != "" {
		t.Errorf("selectors %+v", q.selectors)
	}
	if want := []labelMatcher{{"instance", "=~", "$instance"}, {"action", "=~", "block|ban"}}; !slices.Equal(q.selectors[0].matchers, want) {
		t.Errorf("matchers %+v, want %+v", q.selectors[0].matchers, want)
	}
	if !slices.Equal(q.groupLabels, []string{"purpose", "action"}) || !q.aggregates {
		t.Errorf("groupLabels %v aggregates %v", q.groupLabels, q.aggregates)
	}
	for _, bad := range []string{
		`{__name__="caddy_robots_fetch_total"}`,
		`sum without (mode) (caddy_robots_fetch_total)`,
		`histogram_quantile(0.9, caddy_robots_fetch_total)`,
		`caddy_robots_fetch_total{result=ok}`,
		`caddy_robots_fetch_total{result="ok"`,
	} {
		if _, err := parsePromQL(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
