package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/audit"
)

// maxFetch bounds what is read of a robots.txt, from a file or a URL: twice
// what RFC 9309 crawlers read, so that lint can tell by how much a file is
// too large.
const maxFetch = 2 * enforce.MaxSize

// UserAgent is the User-Agent of the subcommands' downloads of a
// robots.txt (the audit lists it apart from crawlers).
const UserAgent = audit.OwnCLIUserAgent + " (+https://github.com/caddyrobots/caddy-robots)"

// fetchTimeout bounds the download of a robots.txt given by URL.
const fetchTimeout = 15 * time.Second

// Source is a robots.txt read by a subcommand.
type Source struct {
	Name string // the path or URL as given
	Body []byte
	Note string // how the body was obtained, when it is not simply the file
	// Unavailable is set when the URL answered 5xx: RFC 9309 §2.3.1.4
	// tells crawlers to assume a complete disallow, and the handler
	// refuses them (unavailable disallow) until a copy is obtained.
	Unavailable bool
}

// LoadRobots reads a robots.txt from a file or an http(s) URL. For a URL it
// follows RFC 9309 §2.3.1: a 4xx status means there are no rules (an empty
// body, with a note); a 5xx status makes the source unavailable; a network
// error is an error.
func LoadRobots(ctx context.Context, src string) (*Source, error) {
	if src == "" {
		return nil, errors.New("no robots.txt given")
	}
	if !strings.HasPrefix(src, "http://") && !strings.HasPrefix(src, "https://") {
		return readRobotsFile(src)
	}
	s := &Source{Name: src}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, fmt.Errorf("robots.txt URL %q: %w", src, err)
	}
	req.Header.Set("User-Agent", UserAgent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching robots.txt: %w", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 500:
		s.Unavailable = true
		s.Note = fmt.Sprintf("status %s: unavailable (RFC 9309 §2.3.1.4: crawlers must assume a complete disallow)", resp.Status)
		return s, nil
	case resp.StatusCode >= 400:
		s.Note = fmt.Sprintf("status %s: no rules (RFC 9309 §2.3.1.3: crawlers may access everything)", resp.Status)
		return s, nil
	case resp.StatusCode >= 300:
		return nil, fmt.Errorf("fetching robots.txt %s: status %s after redirects", src, resp.Status)
	}
	s.Body, err = io.ReadAll(io.LimitReader(resp.Body, maxFetch))
	if err != nil {
		return nil, fmt.Errorf("reading robots.txt from %s: %w", src, err)
	}
	return s, nil
}

// readRobotsFile reads a robots.txt from a file, up to maxFetch bytes.
func readRobotsFile(path string) (*Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading robots.txt: %w", err)
	}
	defer f.Close()
	body, err := io.ReadAll(io.LimitReader(f, maxFetch))
	if err != nil {
		return nil, fmt.Errorf("reading robots.txt %s: %w", path, err)
	}
	return &Source{Name: path, Body: body}, nil
}
