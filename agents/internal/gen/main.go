// Command gen rebuilds agents/data/catalogue.json from agents/data/curated.json
// and the upstream lists in agents/data/upstream/. Run it with
// `go generate ./agents` from the module root.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/caddyrobots/caddy-robots/agents/internal/catalogue"
)

func main() {
	dir := flag.String("data", "data", "the data directory of package agents")
	flag.Parse()
	out, err := catalogue.Build(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	path := filepath.Join(*dir, "catalogue.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
