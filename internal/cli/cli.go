// Package cli is the `caddy robots` command line: the check, lint, audit
// and ranges subcommands, the plumbing every subcommand shares (exit codes,
// streams, reading a robots.txt from a file or a URL) and finding a site's
// robots handler in a Caddy config.
//
// It cannot import the root package (the root registers the commands), so
// what only the root knows (the robots handler's configuration: its option
// flags, and a site's options read from them or from a config) comes in
// through [Hooks]. It imports
// Caddy's cmd and config packages because its job is Caddy's command line:
// the exit codes must pass through Caddy's main, and a Caddyfile is read
// with Caddy's own adapter.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/caddyrobots/caddy-robots/agents"
)

// Exit codes of the robots subcommands. A Caddy command that returns
// (1, nil) exits 0, so "refused" uses a code above 1.
const (
	ExitOK      = 0 // all allowed / no finding that fails
	ExitFailure = 1 // usage or I/O error; lint findings that fail
	ExitRefused = 3 // robots check: at least one URL is refused
)

// Hooks are what the subcommands need of the root package, which owns the
// robots handler's configuration types.
type Hooks struct {
	// OptionFlags adds the flags of the handler's options that bear on a
	// decision (--mode, --preferences, ...), shared by check and audit.
	OptionFlags func(*pflag.FlagSet)
	// Site reads the handler's options from those flags, or from the
	// handler that serves --site in the config given with --config, for
	// check and audit.
	Site func(env *Env) (*Site, error)
}

// Command is the `caddy robots` command to register with Caddy.
func Command(h Hooks) caddycmd.Command {
	return caddycmd.Command{
		Name:  "robots",
		Usage: "check|lint|audit|ranges",
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
  caddy robots ranges fetch --out <dir>
      Downloads every crawler IP list into <dir>, for verify { ranges_dir <dir> }.
`,
		CobraFunc: func(cmd *cobra.Command) { AddCommands(cmd, h, nil) },
	}
}

// AddCommands adds the robots subcommands to cmd. record, when not nil,
// receives every exit code (for in-process tests).
func AddCommands(cmd *cobra.Command, h Hooks, record func(int)) {
	cmd.AddCommand(newCheckCommand(h, record), newLintCommand(record), newAuditCommand(h, record), newRangesCommand(record))
}

// Env is what a subcommand runs with: its flags, arguments and streams.
type Env struct {
	Ctx    context.Context
	Flags  *pflag.FlagSet
	Args   []string
	Stdout io.Writer
	Stderr io.Writer
}

// Func runs a subcommand and returns its exit code.
type Func func(env *Env) (int, error)

// RunE adapts f to cobra. The exit code goes through
// caddycmd.WrapCommandFuncForCobra, which is what makes a code above 1
// reach the shell; a non-nil error is logged by Caddy's logger.
func RunE(f Func, record func(int)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		code, err := f(&Env{Ctx: ctx, Flags: cmd.Flags(), Args: args, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()})
		if record != nil {
			record(code)
		}
		if err == nil && code > 1 {
			// The code is the answer, not a failure to report: without
			// this, cobra prints "Error: exiting with status 3".
			cmd.SilenceErrors = true
		}
		var answer ResultError
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

// ResultError is a subcommand's answer of exit status 1 that its report
// already stated (lint findings): no error line follows the report.
type ResultError struct{ Msg string }

func (e ResultError) Error() string { return e.Msg }

// DescribeAgent names a crawler for people: "GPTBot (OpenAI, ai-training)".
func DescribeAgent(a agents.Agent) string {
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

// Plural returns "1 thing" or "n things".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
