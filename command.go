package caddyrobots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/audit"
)

// Exit codes of the robots subcommands. A Caddy command that returns
// (1, nil) exits 0, so "refused" uses a code above 1.
const (
	exitOK      = 0 // all allowed / no finding that fails
	exitFailure = 1 // usage or I/O error; lint findings that fail
	exitRefused = 3 // robots check: at least one URL is refused
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "robots",
		Usage: "check|lint|audit",
		Short: "Checks URLs, lints robots.txt files and audits access logs against them",
		Long: `
Tools for operators of caddy-robots. Each one reads robots.txt exactly as the
robots handler does (RFC 9309, read literally) and knows the same crawlers.

  caddy robots check --robots <file|url> --agent <User-Agent> [--ip <addr>] <url>...
      Would this crawler be allowed to fetch these URLs, and why?
  caddy robots lint [--strict] <file|url>
      What the parser ignores and what will surprise, with line numbers.
  caddy robots audit --robots <file|url> [--robots-new <file>] <access-log>...
      Which crawlers broke the rules in Caddy's JSON access logs.
`,
		CobraFunc: func(cmd *cobra.Command) { addRobotsCommands(cmd, nil) },
	})
}

// cliEnv is what a subcommand runs with: its flags, arguments and streams.
type cliEnv struct {
	ctx    context.Context
	flags  *pflag.FlagSet
	args   []string
	stdout io.Writer
	stderr io.Writer
}

// cliFunc runs a subcommand and returns its exit code.
type cliFunc func(env *cliEnv) (int, error)

// addRobotsCommands adds the robots subcommands to cmd. record, when not
// nil, receives every exit code (for in-process tests).
func addRobotsCommands(cmd *cobra.Command, record func(int)) {
	cmd.AddCommand(newCheckCommand(record), newLintCommand(record), newAuditCommand(record))
}

// runE adapts f to cobra. The exit code goes through
// caddycmd.WrapCommandFuncForCobra, which is what makes a code above 1
// reach the shell; a non-nil error is logged by Caddy's logger.
func runE(f cliFunc, record func(int)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		code, err := f(&cliEnv{ctx: ctx, flags: cmd.Flags(), args: args, stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()})
		if record != nil {
			record(code)
		}
		if err == nil && code > 1 {
			// The code is the answer, not a failure to report: without
			// this, cobra prints "Error: exiting with status 3".
			cmd.SilenceErrors = true
		}
		var answer resultError
		if errors.As(err, &answer) {
			// The report said it already: exit 1 without a log line
			// (Caddy's wrapper would log the error, and a result of 1
			// with no error exits 0).
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			return err
		}
		return caddycmd.WrapCommandFuncForCobra(func(caddycmd.Flags) (int, error) { return code, err })(cmd, args)
	}
}

// resultError is a subcommand's answer of exit status 1 that its report
// already stated (lint findings): no error line follows the report.
type resultError struct{ msg string }

func (e resultError) Error() string { return e.msg }

// maxFetch bounds what is read of a robots.txt, from a file or a URL: twice
// what RFC 9309 crawlers read, so that lint can tell by how much a file is
// too large.
const maxFetch = 2 * enforce.MaxSize

// cliUserAgent is the User-Agent of the subcommands' downloads of a
// robots.txt (the audit lists it apart from crawlers).
const cliUserAgent = audit.OwnCLIUserAgent + " (+https://github.com/caddyrobots/caddy-robots)"

// fetchTimeout bounds the download of a robots.txt given by URL.
const fetchTimeout = 15 * time.Second

// source is a robots.txt read by a subcommand.
type source struct {
	name string // the path or URL as given
	body []byte
	note string // how the body was obtained, when it is not simply the file
	// unavailable is set when the URL answered 5xx: RFC 9309 §2.3.1.4
	// tells crawlers to assume a complete disallow, and the handler
	// refuses them (unavailable disallow) until a copy is obtained.
	unavailable bool
}

// loadRobots reads a robots.txt from a file or an http(s) URL. For a URL it
// follows RFC 9309 §2.3.1: a 4xx status means there are no rules (an empty
// body, with a note); a 5xx status or a network error is an error.
func loadRobots(ctx context.Context, src string) (*source, error) {
	if src == "" {
		return nil, errors.New("no robots.txt given")
	}
	s := &source{name: src}
	if !strings.HasPrefix(src, "http://") && !strings.HasPrefix(src, "https://") {
		f, err := os.Open(src)
		if err != nil {
			return nil, fmt.Errorf("reading robots.txt: %w", err)
		}
		defer f.Close()
		s.body, err = io.ReadAll(io.LimitReader(f, maxFetch))
		if err != nil {
			return nil, fmt.Errorf("reading robots.txt %s: %w", src, err)
		}
		return s, nil
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, fmt.Errorf("robots.txt URL %q: %w", src, err)
	}
	req.Header.Set("User-Agent", cliUserAgent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching robots.txt: %w", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 500:
		s.unavailable = true
		s.note = fmt.Sprintf("status %s: unavailable (RFC 9309 §2.3.1.4: crawlers must assume a complete disallow)", resp.Status)
		return s, nil
	case resp.StatusCode >= 400:
		s.note = fmt.Sprintf("status %s: no rules (RFC 9309 §2.3.1.3: crawlers may access everything)", resp.Status)
		return s, nil
	case resp.StatusCode >= 300:
		return nil, fmt.Errorf("fetching robots.txt %s: status %s after redirects", src, resp.Status)
	}
	s.body, err = io.ReadAll(io.LimitReader(resp.Body, maxFetch))
	if err != nil {
		return nil, fmt.Errorf("reading robots.txt from %s: %w", src, err)
	}
	return s, nil
}

// describeAgent names a crawler for people: "GPTBot (OpenAI, ai-training)".
func describeAgent(a agents.Agent) string {
	var extra []string
	if a.Operator != "" {
		extra = append(extra, a.Operator)
	}
	if a.Category != "" {
		extra = append(extra, string(a.Category))
	}
	if !a.Known {
		extra = append(extra, "not in the catalogue")
	}
	name := a.Name
	if name == "" {
		name = "(unnamed client)"
	}
	if len(extra) == 0 {
		return name
	}
	return name + " (" + strings.Join(extra, ", ") + ")"
}

// plural returns "1 thing" or "n things".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
