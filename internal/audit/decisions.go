package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// Decision is one line of `caddy robots audit --format decisions`: a
// request of the log and what the robots handler decides on it, in the
// vocabulary of the admin API's POST /robots/check, so that the server,
// the admin check, `caddy robots check` and the audit can be compared
// request by request.
//
// Decision is allow, block, throttle or ban. Reason, for a refusal, is
// rule, spoofed, unavailable, ban, rate, target, length, unverified or
// preference; for an allowed crawler's request "allowed by rule", "no rule
// disallows" or "no group applies", as the check says it; and for a
// request that is not judged, why: "not a crawler", "/robots.txt is always
// served", "exempt network", "not judged (libraries ignore)" or "this
// plugin's own request". Lines without a User-Agent (Common Log Format)
// are not judged and have no Decision.
type Decision struct {
	TS        string `json:"ts"`         // the line's time, RFC 3339 in UTC; "" when it has none
	Host      string `json:"host"`       // the Host as logged ("" in CLF)
	Method    string `json:"method"`     // as logged
	URI       string `json:"uri"`        // the request target as sent
	ClientIP  string `json:"client_ip"`  // client_ip, else remote_ip (CLF: the first field)
	UserAgent string `json:"user_agent"` // as logged
	Crawler   string `json:"crawler"`    // the crawler identified; "" for a person
	Decision  string `json:"decision"`
	Reason    string `json:"reason"`
	Rule      string `json:"rule"` // the rule that decided ("Disallow: /x (line 3)"), "" when none
	Line      int    `json:"line"` // its line in robots.txt, 0 when none
	// Preference is the AI usage preference that refused the request.
	Preference string `json:"preference"`
	// JudgedAs is the form of the target a rule or preference refused,
	// when it is not the target as sent.
	JudgedAs string `json:"judged_as"`
	// Strike says whether the refusal counted as a strike; NoStrike why
	// a refusal by rule did not.
	Strike   bool   `json:"strike"`
	NoStrike string `json:"no_strike,omitempty"`
	Verdict  string `json:"verdict,omitempty"` // verified, spoofed or unverified
	Token    string `json:"token,omitempty"`   // the token whose group was selected ("*" for the "*" group)
	Group    string `json:"group,omitempty"`
	Version  string `json:"version,omitempty"` // the robots.txt version's ID
	// RetryAfterSeconds is the wait a throttle, a ban or an unavailable
	// robots.txt imposed.
	RetryAfterSeconds float64 `json:"retry_after_seconds,omitempty"`
	// CrawlDelaySeconds is the interval enforced between this crawler's
	// requests.
	CrawlDelaySeconds float64 `json:"crawl_delay_seconds,omitempty"`
	Mode              string  `json:"mode"`     // enforce, or log (nothing refused; the decision is the same)
	Log               string  `json:"log"`      // the log the line is in
	LogLine           int64   `json:"log_line"` // its line number, from 1
}

// decisionWriter writes the Decision of each line; a nil one writes
// nothing.
type decisionWriter struct {
	enc  *json.Encoder
	a    *Auditor
	mode string
}

func newDecisionWriter(w io.Writer, a *Auditor) *decisionWriter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	mode := "enforce"
	if a.cfg.LogMode {
		mode = "log"
	}
	return &decisionWriter{enc: enc, a: a, mode: mode}
}

// base fills the fields of a line as logged.
func (w *decisionWriter) base(e *Entry, ue *uaEntry) Decision {
	d := Decision{
		Host: string(e.Host), Method: string(e.Method), URI: string(e.URI),
		ClientIP: string(e.Addr()), UserAgent: string(e.UserAgent),
		Mode: w.mode, Log: w.a.log, LogLine: w.a.lineNo,
	}
	if !e.Time.IsZero() {
		d.TS = e.Time.UTC().Format(time.RFC3339Nano)
	}
	if ue != nil {
		d.Crawler = ue.sh.Name
	}
	return d
}

func (w *decisionWriter) write(d *Decision) error {
	if err := w.enc.Encode(d); err != nil {
		return fmt.Errorf("writing decisions: %w", err)
	}
	return nil
}

// other writes the decision on a request that is not judged.
func (w *decisionWriter) other(e *Entry, ue *uaEntry, decision, reason string) error {
	if w == nil {
		return nil
	}
	d := w.base(e, ue)
	d.Decision, d.Reason = decision, reason
	return w.write(&d)
}

// robotsTxt writes the decision on a crawler's request for /robots.txt.
func (w *decisionWriter) robotsTxt(e *Entry, ue *uaEntry) error {
	return w.other(e, ue, policy.Allow.String(), "/robots.txt is always served")
}

// judged writes a judged request's decision, as the admin API's check
// renders an assessment (fillCheckResponse).
func (w *decisionWriter) judged(e *Entry, ue *uaEntry, f *policy.Facts, as *policy.Assessment) error {
	if w == nil {
		return nil
	}
	d := w.base(e, ue)
	d.Decision = as.Action.String()
	d.Verdict = as.Verdict.String()
	switch as.Token {
	case policy.TokenWildcard:
		d.Token = "*"
	case policy.TokenNone:
	default:
		d.Token = ue.sh.Tokens[as.Token]
	}
	dec := as.Decision
	if dec.Group != nil {
		d.Group = dec.Group.String()
	}
	if dec.Rule != nil {
		d.Rule, d.Line = dec.Rule.String(), dec.Rule.Line
	}
	if as.Version != nil {
		d.Version = as.Version.ID
	}
	d.JudgedAs = as.RefusedFormText(f.Target)
	d.Strike, d.NoStrike = as.Strike, as.NoStrike
	if as.Reason == policy.Preference {
		d.Preference = as.Preference.String()
	}
	if as.Interval > 0 {
		d.CrawlDelaySeconds = as.Interval.Seconds()
	}
	switch {
	case as.Action != policy.Allow:
		d.Reason = as.Reason.String()
		if as.RetryAfter > 0 {
			d.RetryAfterSeconds = as.RetryAfter.Seconds()
		}
	case dec.Group == nil:
		d.Reason = "no group applies"
	case dec.Rule != nil:
		d.Reason = "allowed by rule"
	default:
		d.Reason = "no rule disallows"
	}
	return w.write(&d)
}
