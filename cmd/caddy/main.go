// Command caddy is Caddy v2 with its standard modules and the caddy-robots
// handler, so `go run ./cmd/caddy run --config Caddyfile.example` starts the
// demo without xcaddy.
package main

import (
	_ "time/tzdata"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/caddyrobots/caddy-robots"
)

func main() {
	caddycmd.Main()
}
