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
	Robots      string          `json:"robots"`               // the robots.txt judged against
	RobotsNew   string          `json:"robots_new,omitempty"` // the changed robots.txt previewed
	Logs        []string        `json:"logs"`                 // the access logs read
	Lines       int64           `json:"lines"`                // access-log lines read
	Unreadable  int64           `json:"unreadable"`           // lines that are not JSON objects
	NotAccess   int64           `json:"not_access"`           // JSON lines without request.uri
	Browsers    int64           `json:"browser_requests"`     // requests by people's browsers
	Crawlers    int64           `json:"crawler_requests"`     // requests by automated clients
	First       time.Time       `json:"first"`                // earliest "ts"
	Last        time.Time       `json:"last"`                 // latest "ts"
	SeriesStart time.Time       `json:"series_start"`         // start of the first series bucket
	SeriesStep  time.Duration   `json:"series_step_ns"`       // width of a series bucket
	Preview     bool            `json:"preview"`              // RobotsNew was given
	Crawler     []CrawlerReport `json:"crawlers"`             // by requests, most first; the "other" bucket last
	Notes       []string        `json:"notes,omitempty"`      // caveats, for people
}

// CrawlerReport is the behaviour of one crawler.
type CrawlerReport struct {
	Name                 string      `json:"name"`
	Operator             string      `json:"operator,omitempty"`
	Category             string      `json:"category,omitempty"`
	Known                bool        `json:"known"`
	Tokens               []string    `json:"tokens"`
	Requests             int64       `json:"requests"`
	Disallowed           int64       `json:"disallowed"`             // requests the rules refuse
	Rules                []RuleCount `json:"rules,omitempty"`        // the rules that refused most
	CrawlDelayViolations int64       `json:"crawl_delay_violations"` // gaps below the group's interval
	Interval             Seconds     `json:"interval_seconds"`       // the group's Crawl-delay / Request-rate interval
	IgnoresCrawlDelay    bool        `json:"ignores_crawl_delay"`    // documented to ignore Crawl-delay
	Spoofed              int64       `json:"spoofed"`                // requests from addresses outside the operator's lists
	FetchedRobotsTxt     bool        `json:"fetched_robots_txt"`
	RobotsTxtFetches     int64       `json:"robots_txt_fetches"`
	First                time.Time   `json:"first_seen"`
	Last                 time.Time   `json:"last_seen"`
	NewlyRefused         int64       `json:"newly_refused,omitempty"`        // with --robots-new
	NewlyAllowed         int64       `json:"newly_allowed,omitempty"`        // with --robots-new
	NewlyRefusedSample   []string    `json:"newly_refused_sample,omitempty"` // a few paths
	SeriesRequests       []int64     `json:"series_requests"`
	SeriesViolations     []int64     `json:"series_violations"`
}

// RuleCount is how many requests one rule refused.
type RuleCount struct {
	Rule     string `json:"rule"`
	Line     int    `json:"line"`
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
	head := "CRAWLER\tREQUESTS\tDISALLOWED\tCRAWL-DELAY\tSPOOFED\tROBOTS.TXT\tFIRST SEEN\tLAST SEEN"
	if r.Preview {
		head += "\tNEWLY REFUSED"
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
		row := fmt.Sprintf("%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s", c.Name, c.Requests, c.Disallowed, delay, c.Spoofed, robots,
			fmtTime(c.First), fmtTime(c.Last))
		if r.Preview {
			row += "\t" + strconv.FormatInt(c.NewlyRefused, 10)
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
	first := true
	for _, c := range r.Crawler {
		if len(c.Rules) == 0 && len(c.NewlyRefusedSample) == 0 {
			continue
		}
		if first {
			b.WriteString("\n")
			first = false
		}
		for _, ru := range c.Rules {
			fmt.Fprintf(&b, "%s: %d refused by %s\n", c.Name, ru.Requests, ru.Rule)
		}
		if len(c.NewlyRefusedSample) > 0 {
			fmt.Fprintf(&b, "%s: the new robots.txt would refuse %d more, e.g. %s\n", c.Name, c.NewlyRefused,
				strings.Join(c.NewlyRefusedSample, " "))
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\nnote: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
