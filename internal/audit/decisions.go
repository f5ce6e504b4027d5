package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce"
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
//
// An undeclared crawler (a browser's User-Agent caught by a signal) is
// judged as the handler judges it, by the "*" group: Crawler is what it
// claimed ("Chrome (undeclared)"), Undeclared the signal that caught it,
// and Mode log when that signal is in log mode. Its request for the trap
// is refused by the trap's rule (block, reason rule), and Trap says what
// it did to the client.
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
	Mode              string  `json:"mode"` // enforce, or log (nothing refused; the decision is the same)
	// Undeclared is the signal that showed the client to be an undeclared
	// crawler: fetch_metadata, fetch_metadata_safari, client_hints, trap
	// or tls; "" for everyone else. Why, for tls, is what the handshake
	// refuted, as the handler's refusal says it.
	Undeclared string `json:"undeclared,omitempty"`
	Why        string `json:"why,omitempty"`
	// TLSFingerprint and TLSEngine are the line's tls_fingerprint and
	// tls_engine fields, as logged (log_append).
	TLSFingerprint string `json:"tls_fingerprint,omitempty"`
	TLSEngine      string `json:"tls_engine,omitempty"`
	// Trap, on a request for the trap, is what it did to the client:
	// "marked" (judged as a crawler for the hold), or "probation" (a text
	// browser's first trap request).
	Trap    string `json:"trap,omitempty"`
	Log     string `json:"log"`      // the log the line is in
	LogLine int64  `json:"log_line"` // its line number, from 1
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
	if len(e.TLSFingerprint) > 0 {
		d.TLSFingerprint, d.TLSEngine = string(e.TLSFingerprint), string(e.TLSEngine)
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

// exempt writes the decision on a crawler's request from an exempt network.
func (w *decisionWriter) exempt(e *Entry, ue *uaEntry, j *judging) error {
	if w == nil {
		return nil
	}
	d := w.base(e, ue)
	d.Decision, d.Reason = "allow", "exempt network"
	w.judging(&d, j)
	return w.write(&d)
}

// judging fills the mode a request was judged in and, for an undeclared
// crawler, the signal that caught it.
func (w *decisionWriter) judging(d *Decision, j *judging) {
	d.Mode = j.mode()
	if j.undeclared {
		d.Undeclared, d.Why = j.signal.String(), j.why
	}
}

// trap writes the decision on an undeclared crawler's request for the
// trap: refused by the rule that disallows it for "*" (in log mode: the
// refusal enforce would make).
func (w *decisionWriter) trap(e *Entry, ue *uaEntry, rule *enforce.Rule, confirmed bool, j *judging) error {
	if w == nil {
		return nil
	}
	d := w.base(e, ue)
	d.Decision, d.Reason = policy.Block.String(), policy.Rule.String()
	d.Rule, d.Line = rule.String(), rule.Line
	w.judging(&d, j)
	d.Trap = "marked"
	if !confirmed {
		d.Trap = "probation"
	}
	return w.write(&d)
}

// robotsTxt writes the decision on a crawler's request for /robots.txt.
func (w *decisionWriter) robotsTxt(e *Entry, ue *uaEntry) error {
	return w.other(e, ue, policy.Allow.String(), "/robots.txt is always served")
}

// judged writes a judged request's decision, as the admin API's check
// renders an assessment (admin.CheckResponse.Fill).
func (w *decisionWriter) judged(e *Entry, ue *uaEntry, f *policy.Facts, as *policy.Assessment, j *judging) error {
	if w == nil {
		return nil
	}
	d := w.base(e, ue)
	w.judging(&d, j)
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
