package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of an audit. Its JSON form is the --format json
// output of caddy robots audit.
type Report struct {
	Robots      string        `json:"robots"`               // the robots.txt judged against
	RobotsNew   string        `json:"robots_new,omitempty"` // the changed robots.txt previewed
	Logs        []string      `json:"logs"`                 // the access logs read
	Lines       int64         `json:"lines"`                // access-log lines read
	Unreadable  int64         `json:"unreadable"`           // lines that are not JSON objects
	NotAccess   int64         `json:"not_access"`           // JSON lines without request.uri
	Browsers    int64         `json:"browser_requests"`     // requests by people's browsers
	Crawlers    int64         `json:"crawler_requests"`     // requests by automated clients
	First       time.Time     `json:"first"`                // earliest "ts"
	Last        time.Time     `json:"last"`                 // latest "ts"
	SeriesStart time.Time     `json:"series_start"`         // start of the first series bucket
	SeriesStep  time.Duration `json:"series_step_ns"`       // width of a series bucket
	Preview     bool          `json:"preview"`              // RobotsNew was given
	// Preferences: the robots.txt states AI usage preferences
	// (Content-Usage, Content-Signal); PreferencesNew: the previewed one does.
	Preferences    bool            `json:"preferences"`
	PreferencesNew bool            `json:"preferences_new,omitempty"`
	Crawler        []CrawlerReport `json:"crawlers"`        // by requests, most first; the "other" bucket last
	Notes          []string        `json:"notes,omitempty"` // caveats, for people
}

// CrawlerReport is the behaviour of one crawler.
type CrawlerReport struct {
	Name       string      `json:"name"`
	Operator   string      `json:"operator,omitempty"`
	Category   string      `json:"category,omitempty"`
	Purpose    string      `json:"purpose,omitempty"` // documented purpose: search, ai-training, ai-answers, seo...
	Known      bool        `json:"known"`
	Tokens     []string    `json:"tokens"`
	Requests   int64       `json:"requests"`
	Disallowed int64       `json:"disallowed"`      // requests the rules refuse
	Rules      []RuleCount `json:"rules,omitempty"` // the rules that refused most
	// PreferenceConflicts counts the allowed requests (other than
	// /robots.txt) for which the AI usage preference that applies to the
	// path refuses the crawler's documented purpose; PreferenceRefusals
	// says which labels refused, the most frequent first.
	PreferenceConflicts  int64          `json:"preference_conflicts"`
	PreferenceRefusals   []RefusalCount `json:"preference_refusals,omitempty"`
	CrawlDelayViolations int64          `json:"crawl_delay_violations"` // gaps below the group's interval
	Interval             Seconds        `json:"interval_seconds"`       // the group's Crawl-delay / Request-rate interval
	IgnoresCrawlDelay    bool           `json:"ignores_crawl_delay"`    // documented to ignore Crawl-delay
	Spoofed              int64          `json:"spoofed"`                // requests from addresses outside the operator's lists
	FetchedRobotsTxt     bool           `json:"fetched_robots_txt"`
	RobotsTxtFetches     int64          `json:"robots_txt_fetches"`
	First                time.Time      `json:"first_seen"`
	Last                 time.Time      `json:"last_seen"`
	NewlyRefused         int64          `json:"newly_refused,omitempty"`        // with --robots-new
	NewlyAllowed         int64          `json:"newly_allowed,omitempty"`        // with --robots-new
	NewlyRefusedSample   []string       `json:"newly_refused_sample,omitempty"` // a few paths
	// NewlyConflicting counts, with --robots-new, the requests both files
	// allow that conflict with the new file's preferences and not with the
	// current one's; NewlyConflictingRefusals says which labels refuse.
	NewlyConflicting         int64          `json:"newly_conflicting,omitempty"`
	NewlyConflictingRefusals []RefusalCount `json:"newly_conflicting_refusals,omitempty"`
	SeriesRequests           []int64        `json:"series_requests"`
	SeriesViolations         []int64        `json:"series_violations"`
}

// RuleCount is how many requests one rule refused.
type RuleCount struct {
	Rule     string `json:"rule"`
	Line     int    `json:"line"`
	Requests int64  `json:"requests"`
}

// RefusalCount is how many requests one preference refused, e.g. 3 by
// "ai-training refused by Content-Usage train-ai=n (line 4)".
type RefusalCount struct {
	Refusal  string `json:"refusal"` // enforce.Refusal.String()
	Purpose  string `json:"purpose"` // the purpose refused: ai-training, ai-answers or search
	Scheme   string `json:"scheme"`  // Content-Usage or Content-Signal
	Label    string `json:"label"`   // train-ai, ai-input...
	Value    string `json:"value"`   // n, no
	Line     int    `json:"line"`    // the robots.txt line that states it
	Requests int64  `json:"requests"`
}

// Seconds is a duration that marshals as a number of seconds.
type Seconds time.Duration

// MarshalJSON writes the duration in seconds.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(s).Seconds(), 'f', -1, 64), nil
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing JSON report: %w", err)
	}
	return nil
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// WriteTable writes the report as aligned text for a terminal.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "robots.txt   %s\n", r.Robots)
	if r.RobotsNew != "" {
		fmt.Fprintf(&b, "preview of   %s\n", r.RobotsNew)
	}
	fmt.Fprintf(&b, "logs         %s\n", strings.Join(r.Logs, ", "))
	fmt.Fprintf(&b, "period       %s to %s\n", fmtTime(r.First), fmtTime(r.Last))
	fmt.Fprintf(&b, "lines        %d requests (%d by browsers, %d by crawlers); %d unreadable, %d not access logs\n\n",
		r.Lines, r.Browsers, r.Crawlers, r.Unreadable, r.NotAccess)

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	// The preference columns show only when a file states preferences.
	newPrefs := r.Preview && r.PreferencesNew
	head := "CRAWLER\tREQUESTS\tDISALLOWED"
	if r.Preferences {
		head += "\tPREF. CONFLICTS"
	}
	head += "\tCRAWL-DELAY\tSPOOFED\tROBOTS.TXT\tFIRST SEEN\tLAST SEEN"
	if r.Preview {
		head += "\tNEWLY REFUSED"
	}
	if newPrefs {
		head += "\tNEWLY CONFLICTING"
	}
	fmt.Fprintln(tw, head)
	for _, c := range r.Crawler {
		delay := strconv.FormatInt(c.CrawlDelayViolations, 10)
		switch {
		case c.Interval == 0:
			delay = "-"
		case c.IgnoresCrawlDelay:
			delay += "*"
		}
		robots := yesNo(c.FetchedRobotsTxt)
		if c.RobotsTxtFetches > 1 {
			robots += " (" + strconv.FormatInt(c.RobotsTxtFetches, 10) + ")"
		}
		row := fmt.Sprintf("%s\t%d\t%d", c.Name, c.Requests, c.Disallowed)
		if r.Preferences {
			row += "\t" + strconv.FormatInt(c.PreferenceConflicts, 10)
		}
		row += fmt.Sprintf("\t%s\t%d\t%s\t%s\t%s", delay, c.Spoofed, robots, fmtTime(c.First), fmtTime(c.Last))
		if r.Preview {
			row += "\t" + strconv.FormatInt(c.NewlyRefused, 10)
		}
		if newPrefs {
			row += "\t" + strconv.FormatInt(c.NewlyConflicting, 10)
		}
		fmt.Fprintln(tw, row)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ignores := false
	for _, c := range r.Crawler {
		ignores = ignores || (c.IgnoresCrawlDelay && c.Interval > 0)
	}
	if ignores {
		b.WriteString("* documented to ignore Crawl-delay: the robots handler does not throttle it unless told to\n")
	}
	if r.Preferences || newPrefs {
		b.WriteString("conflicts: allowed requests for which the AI usage preference (Content-Usage, Content-Signal) refuses the crawler's documented purpose\n")
	}
	first := true
	for _, c := range r.Crawler {
		if len(c.Rules) == 0 && len(c.NewlyRefusedSample) == 0 && len(c.PreferenceRefusals) == 0 && len(c.NewlyConflictingRefusals) == 0 {
			continue
		}
		if first {
			b.WriteString("\n")
			first = false
		}
		for _, ru := range c.Rules {
			fmt.Fprintf(&b, "%s: %d refused by %s\n", c.Name, ru.Requests, ru.Rule)
		}
		for _, rc := range c.PreferenceRefusals {
			fmt.Fprintf(&b, "%s: %d allowed, but %s\n", c.Name, rc.Requests, rc.Refusal)
		}
		if len(c.NewlyRefusedSample) > 0 {
			fmt.Fprintf(&b, "%s: the new robots.txt would refuse %d more, e.g. %s\n", c.Name, c.NewlyRefused,
				strings.Join(c.NewlyRefusedSample, " "))
		}
		for _, rc := range c.NewlyConflictingRefusals {
			fmt.Fprintf(&b, "%s: with the new robots.txt, %d more allowed, but %s\n", c.Name, rc.Requests, rc.Refusal)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\nnote: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
