package caddyrobots

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	"github.com/caddyrobots/caddy-robots/internal/cli"
)

// init registers `caddy robots` (check, lint, audit; internal/cli) with
// what only this package knows: the handler's options (cli_site.go) and
// the check subcommand (cmd_check.go).
func init() {
	caddycmd.RegisterCommand(cli.Command(cliHooks()))
}

// cliHooks are the handler's side of the robots subcommands.
func cliHooks() cli.Hooks {
	return cli.Hooks{Check: newCheckCommand, OptionFlags: addOptionFlags, AuditSite: auditSite}
}
