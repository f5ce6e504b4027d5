package cli

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/ranges"
)

// newRangesCommand is `caddy robots ranges`, whose fetch subcommand writes
// every crawler IP list the catalogue knows into a directory: an offline
// mirror for `verify { ranges_dir }`.
func newRangesCommand(record func(int)) *cobra.Command {
	return newRangesCommandFrom(record, nil)
}

// newRangesCommandFrom is newRangesCommand downloading from sources (by
// method, as agents.RangesFetcherConfig.Sources) instead of the operators'
// URLs when sources is not nil: tests stand in for the publishers.
func newRangesCommandFrom(record func(int), sources map[string][]string) *cobra.Command {
	c := &cobra.Command{
		Use:   "ranges",
		Short: "Crawler IP lists: fetch them all for an offline mirror",
	}
	fetch := &cobra.Command{
		Use:   "fetch --out <dir>",
		Short: "Downloads every crawler IP list the catalogue knows into a directory",
		Long: `Downloads the IP list of every verification method the catalogue knows
(Google, Bing, OpenAI, Perplexity, Anthropic, Apple, DuckDuckGo, ...) from its
operator and writes one file per method, <dir>/<method>.json, in Google's JSON
format, with creationTime the time of the download. A server that must not
reach the internet reads them with

    verify {
        ranges_dir <dir>
    }

A list older than 30 days no longer proves a spoof: run this again regularly
(from cron, say). A list that fails to download keeps its previous file; the
exit status is then 1.`,
		Args: cobra.NoArgs,
		RunE: RunE(func(env *Env) (int, error) { return fetchRanges(env, sources) }, record),
	}
	fetch.Flags().String("out", "", "the directory to write the lists into (created if missing)")
	c.AddCommand(fetch)
	return c
}

// fetchRanges downloads every list and writes one file per method.
func fetchRanges(env *Env, sources map[string][]string) (int, error) {
	out, _ := env.Flags.GetString("out")
	if out == "" {
		return ExitFailure, fmt.Errorf("ranges fetch: --out <dir> is required")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return ExitFailure, fmt.Errorf("ranges fetch: %w", err)
	}
	f, err := agents.NewRangesFetcher(agents.RangesFetcherConfig{Sources: sources})
	if err != nil {
		return ExitFailure, fmt.Errorf("ranges fetch: %w", err)
	}
	failed := map[string][]string{}
	for _, rep := range f.FetchAll(env.Ctx) {
		if rep.Err != nil {
			failed[rep.Method] = append(failed[rep.Method], rep.Err.Error())
		}
	}
	written := 0
	for _, m := range f.Methods() {
		prefixes, asOf, ok := f.Ranges(m)
		if !ok {
			fmt.Fprintf(env.Stderr, "%s: not written (the previous file, if any, stays): %s\n", m, strings.Join(failed[m], "; "))
			continue
		}
		path := filepath.Join(out, ranges.FileName(m))
		if err := writeRangesFile(path, prefixes, asOf); err != nil {
			return ExitFailure, fmt.Errorf("ranges fetch: %w", err)
		}
		written++
		fmt.Fprintf(env.Stdout, "%s: %s\n", path, Plural(len(prefixes), "prefix", "prefixes"))
	}
	if written < len(f.Methods()) {
		return ExitFailure, ResultError{Msg: fmt.Sprintf("ranges fetch: %d of %d lists could not be downloaded", len(f.Methods())-written, len(f.Methods()))}
	}
	return ExitOK, nil
}

// rangesFile is a list as fetch writes it: Google's JSON format, which
// agents.LoadRanges reads, with the time of the download as creationTime.
type rangesFile struct {
	CreationTime string        `json:"creationTime"`
	Prefixes     []rangeObject `json:"prefixes"`
}

type rangeObject struct {
	IPv4 string `json:"ipv4Prefix,omitempty"`
	IPv6 string `json:"ipv6Prefix,omitempty"`
}

// writeRangesFile writes prefixes dated asOf to path through a temporary
// file, so that a server reading the directory never sees half a list.
func writeRangesFile(path string, prefixes []netip.Prefix, asOf time.Time) error {
	file := rangesFile{CreationTime: asOf.UTC().Format(time.RFC3339), Prefixes: make([]rangeObject, 0, len(prefixes))}
	for _, p := range prefixes {
		if p.Addr().Is4() {
			file.Prefixes = append(file.Prefixes, rangeObject{IPv4: p.String()})
		} else {
			file.Prefixes = append(file.Prefixes, rangeObject{IPv6: p.String()})
		}
	}
	data, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ranges-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
