// Package ranges keeps the published crawler IP lists current: it
// downloads the lists the operators publish (or mirrors given instead),
// keeps them in storage so that a restart while offline starts from them,
// and hands every accepted list to the verifiers that use it.
//
// It is not part of agents because it does I/O on a schedule, logs and
// counts (zap, Prometheus) and keeps state in storage; agents stays a pure
// catalogue and verifier. It knows nothing of Caddy: the root package
// parses the configuration, passes Caddy's storage in and registers the
// metrics.
package ranges

import (
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
)

// DefaultRefresh is how often the operators' IP lists are downloaded
// again when no refresh interval is configured.
const DefaultRefresh = 12 * time.Hour

// OperatorsEnv names an environment variable that, set to "off", turns
// the operators' downloads off for the whole process: no operator's URL is
// downloaded, only URLs given explicitly. Test suites and builds that must
// never reach the internet set it.
const OperatorsEnv = "CADDY_ROBOTS_RANGES_OPERATORS"

// Config says which IP lists are downloaded, and how often.
type Config struct {
	// Refresh is the interval between downloads; 0 downloads nothing.
	Refresh time.Duration
	// Operators says whether the operators' own URLs are downloaded for
	// the methods that were given no URL or file.
	Operators bool
	// URLs maps a verification method to the URL to download its list
	// from instead of the operator's; Files to a file read once instead.
	URLs  map[string]string
	Files map[string]string
	// Dir is the directory lists were added from (AddDir), if any.
	Dir string
}

// NewConfig checks the lists given per method (lists: method → file or
// URL) and sorts them into files and URLs. With the environment variable
// OperatorsEnv set to "off", operators is taken as false.
func NewConfig(refresh time.Duration, operators bool, lists map[string]string) (Config, error) {
	c := Config{Refresh: refresh, Operators: operators}
	if os.Getenv(OperatorsEnv) == "off" {
		c.Operators = false
	}
	for method, src := range lists {
		if err := CheckMethod(method); err != nil {
			return c, err
		}
		if !isURL(src) {
			if c.Files == nil {
				c.Files = map[string]string{}
			}
			c.Files[method] = src
			continue
		}
		if err := checkURL(src); err != nil {
			return c, fmt.Errorf("ranges for %s: %w", method, err)
		}
		if c.URLs == nil {
			c.URLs = map[string]string{}
		}
		c.URLs[method] = src
	}
	return c, nil
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// checkURL accepts https URLs, and http URLs only on a loopback host: a
// list fetched in clear text could be rewritten on the way to make any
// address pass as a crawler.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("bad URL: %w", err)
	}
	if u.Host == "" {
		return fmt.Errorf("URL %q has no host", raw)
	}
	if u.Scheme == "https" {
		return nil
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); (err == nil && a.IsLoopback()) || host == "localhost" {
		return nil
	}
	return fmt.Errorf("URL %q: plain http is allowed only for loopback hosts; use https", raw)
}

// CheckMethod checks the method of `verify { ranges <method> <src> }`: the
// error lists the valid methods and the syntax, and suggests the method
// whose key or crawler token the mistaken name is part of (gptbot:
// openai-gptbot).
func CheckMethod(method string) error {
	var keys []string
	guess := ""
	low := strings.ToLower(method)
	for _, m := range agents.VerificationMethods() {
		if m.Key == method {
			return nil
		}
		keys = append(keys, m.Key)
		if guess != "" || low == "" {
			continue
		}
		if strings.Contains(m.Key, low) || strings.EqualFold(m.Name, method) {
			guess = m.Key
		}
		for _, t := range m.Tokens {
			if strings.EqualFold(t, method) {
				guess = m.Key
			}
		}
	}
	msg := fmt.Sprintf("ranges: unknown verification method %q", method)
	if guess != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", guess)
	}
	return fmt.Errorf("%s; write ranges <method> <file or https URL>, with one of the methods %s", msg, strings.Join(keys, ", "))
}

// LoadFiles reads the lists given as files, for the verifier: the
// prefixes by method, and the date of each list (its creationTime, else
// the file's modification time: agents.LoadRangesFileAsOf), so that a file
// older than 30 days no longer proves a spoof, as a download that old
// would not.
func (c Config) LoadFiles() (map[string][]netip.Prefix, map[string]time.Time, error) {
	if len(c.Files) == 0 {
		return nil, nil, nil
	}
	out := make(map[string][]netip.Prefix, len(c.Files))
	asOf := make(map[string]time.Time, len(c.Files))
	for method, file := range c.Files {
		p, date, err := agents.LoadRangesFileAsOf(file)
		if err != nil {
			return nil, nil, fmt.Errorf("robots: verify ranges for %s: %w", method, err)
		}
		out[method], asOf[method] = p, date
	}
	return out, asOf, nil
}

// FileName is the name of a method's list in a ranges directory: what
// `caddy robots ranges fetch --out DIR` writes and `verify { ranges_dir
// DIR }` reads, such as openai-gptbot.json.
func FileName(method string) string { return method + ".json" }

// AddDir reads the lists of dir (verify { ranges_dir }): every method
// whose FileName is in dir is read from there, unless a ranges line gave
// it a file or URL of its own. Like any file, these lists are not
// downloaded again. A directory that cannot be read, or holds no list,
// is an error that says what it should hold.
func (c *Config) AddDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("ranges_dir: %w", err)
	}
	present := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() {
			present[e.Name()] = true
		}
	}
	found := 0
	for _, m := range agents.VerificationMethods() {
		if !present[FileName(m.Key)] {
			continue
		}
		found++
		_, file := c.Files[m.Key]
		_, url := c.URLs[m.Key]
		if file || url {
			continue
		}
		if c.Files == nil {
			c.Files = map[string]string{}
		}
		c.Files[m.Key] = filepath.Join(dir, FileName(m.Key))
	}
	if found == 0 {
		return fmt.Errorf("ranges_dir %s holds no IP list: it should hold files named <method>.json (such as %s), as `caddy robots ranges fetch --out %s` writes them", dir, FileName("google-common"), dir)
	}
	c.Dir = dir
	return nil
}

// Sources returns the URLs to download, by method: the URL given, else
// (with Operators) the operator's own; methods given a file are never
// downloaded. Nil when downloads are off.
func (c Config) Sources() map[string][]string {
	if c.Refresh <= 0 {
		return nil
	}
	out := map[string][]string{}
	if c.Operators {
		for _, p := range agents.PublishedLists() {
			if _, file := c.Files[p.Method]; !file {
				out[p.Method] = append(out[p.Method], p.URL)
			}
		}
	}
	for method, u := range c.URLs {
		out[method] = []string{u}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// loopKey identifies the download loop a configuration shares.
func (c Config) loopKey(sources map[string][]string) string {
	methods := make([]string, 0, len(sources))
	for m := range sources {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	var b strings.Builder
	b.WriteString("ranges|" + c.Refresh.String())
	for _, m := range methods {
		b.WriteString("|" + m + "=" + strings.Join(sources[m], ","))
	}
	return b.String()
}
