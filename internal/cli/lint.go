package cli

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
)

func newLintCommand(record func(int)) *cobra.Command {
	c := &cobra.Command{
		Use:   "lint [--strict] <file|url>",
		Short: "Reports what a robots.txt parser ignores and what will surprise",
		Long: `
Lints a robots.txt (a file, or an http(s) URL fetched once) as the robots
handler reads it (RFC 9309): misspelt keys that Google accepts but RFC 9309
ignores, rules before any User-agent line, user-agent values that are not
product tokens, patterns that cannot match, "$" in the middle of a pattern,
rules that never decide because another rule always wins, equal-length
Allow/Disallow conflicts, content beyond 500 KiB, unknown records, and groups
naming a token no known crawler uses (with the tokens it probably meant).

Each finding is an error or a warning, with its line number.
Exit status: 1 if there is an error (with --strict, also a warning), else 0.`,
		Example: `  $ caddy robots lint robots.txt
  $ caddy robots lint --strict https://example.com/robots.txt`,
		Args: cobra.ExactArgs(1),
		RunE: RunE(runLint, record),
	}
	c.Flags().Bool("strict", false, "fail on warnings too")
	return c
}

func runLint(env *Env) (int, error) {
	strict, _ := env.Flags.GetBool("strict")
	src, err := LoadRobots(env.Ctx, env.Args[0])
	if err != nil {
		return ExitFailure, fmt.Errorf("robots lint: %w", err)
	}
	w := env.Stdout
	if src.Note != "" {
		fmt.Fprintf(w, "%s: %s\n", src.Name, src.Note)
	}
	fs := enforce.Lint(src.Body)
	fs = append(fs, lintTokens(src.Body)...)
	fs = append(fs, lintAIPreferences(src.Body)...)
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Line < fs[j].Line })

	errs, warns := 0, 0
	for _, f := range fs {
		if f.Severity == enforce.Error {
			errs++
		} else {
			warns++
		}
		where := src.Name
		if f.Line > 0 {
			where = fmt.Sprintf("%s:%d", src.Name, f.Line)
		}
		fmt.Fprintf(w, "%s: %s: %s [%s]\n", where, f.Severity, f.Message, f.Code)
	}
	fmt.Fprintf(w, "%s, %s\n", Plural(errs, "error", "errors"), Plural(warns, "warning", "warnings"))
	if errs > 0 || (strict && warns > 0) {
		// (1, nil) would exit 0: the error is what makes the status 1.
		return ExitFailure, ResultError{fmt.Sprintf("robots lint: %s: %s, %s", src.Name, Plural(errs, "error", "errors"), Plural(warns, "warning", "warnings"))}
	}
	return ExitOK, nil
}

// lintAIPreferences lints the AI-preference records (Content-Usage,
// Content-Signal) with enforce's own helper; its findings are warnings.
//
// AI-PREFERENCE LINT HOOK: this is the one place the robots lint command
// calls the AI-preference lint (Robots.LintPreferences in
// enforce/prefs_lint.go).
func lintAIPreferences(body []byte) []enforce.Finding {
	var out []enforce.Finding
	for _, w := range enforce.Parse(body).LintPreferences() {
		out = append(out, enforce.Finding{Line: w.Line, Severity: enforce.Warning, Code: w.Code, Message: w.Message})
	}
	return out
}

// lintTokens reports the user-agent tokens that no crawler of the catalogue
// obeys, with the catalogue tokens they probably meant.
func lintTokens(body []byte) []enforce.Finding {
	r := enforce.Parse(body)
	lines := agentLines(body)
	var out []enforce.Finding
	seen := map[string]bool{}
	var cands []string
	for _, g := range r.Groups() {
		for _, tok := range g.Agents {
			lt := strings.ToLower(tok)
			if tok == "*" || seen[lt] {
				continue
			}
			seen[lt] = true
			line := lines[lt]
			if a, ok := agents.Lookup(tok); ok {
				if !containsFold(a.Tokens, tok) && len(a.Tokens) > 0 {
					out = append(out, enforce.Finding{Line: line, Severity: enforce.Warning, Code: "not-a-token",
						Message: fmt.Sprintf("%s names %s, which obeys the token %s, not %q", tok, a.Name, quoteList(a.Tokens), tok)})
				}
				continue
			}
			if cands == nil {
				cands = catalogueTokens()
			}
			msg := fmt.Sprintf("no known crawler uses the token %q", tok)
			if s := suggest(tok, cands); len(s) > 0 {
				msg += "; did you mean " + quoteList(s) + "?"
			}
			out = append(out, enforce.Finding{Line: line, Severity: enforce.Warning, Code: "unknown-token", Message: msg})
		}
	}
	return out
}

// agentLines maps each lower-cased user-agent value to its first line.
func agentLines(body []byte) map[string]int {
	m := map[string]int{}
	n := 0
	for len(body) > 0 {
		n++
		k := bytes.IndexAny(body, "\r\n")
		line := body
		if k >= 0 {
			line = body[:k]
			if body[k] == '\r' && k+1 < len(body) && body[k+1] == '\n' {
				k++
			}
			body = body[k+1:]
		} else {
			body = nil
		}
		if c := bytes.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		key, val, ok := bytes.Cut(line, []byte(":"))
		if !ok || !strings.EqualFold(strings.TrimSpace(string(key)), "user-agent") {
			continue
		}
		v := strings.ToLower(strings.TrimSpace(string(val)))
		if _, dup := m[v]; !dup {
			m[v] = n
		}
	}
	return m
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " or ")
}

// catalogueTokens returns every distinct product token of the catalogue.
func catalogueTokens() []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range agents.Catalogue() {
		for _, t := range a.Tokens {
			if lt := strings.ToLower(t); !seen[lt] {
				seen[lt] = true
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}

// suggest returns up to three catalogue tokens close to tok: the smallest
// edit distance (case-insensitive), at most 1 for short tokens and at most
// a quarter of the length (up to 3) for long ones; a token that contains
// or is contained in tok (both at least 5 letters) counts as distance 1.
func suggest(tok string, cands []string) []string {
	lt := strings.ToLower(tok)
	limit := min(max(1, len(lt)/4), 3)
	type cand struct {
		t string
		d int
	}
	var best []cand
	for _, c := range cands {
		lc := strings.ToLower(c)
		d := levenshtein(lt, lc)
		if len(lc) >= 5 && len(lt) >= 5 && (strings.Contains(lt, lc) || strings.Contains(lc, lt)) {
			d = min(d, 1) // "ChatGPT" for "ChatGPT-User"
		}
		if d <= limit {
			best = append(best, cand{c, d})
		}
	}
	sort.SliceStable(best, func(i, j int) bool { return best[i].d < best[j].d })
	var out []string
	for _, b := range best {
		if len(out) == 3 || b.d > best[0].d {
			break
		}
		out = append(out, b.t)
	}
	return out
}

// levenshtein is the edit distance of two short strings.
func levenshtein(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
