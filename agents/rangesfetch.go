package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sync"
	"time"
)

// Defaults of RangesFetcherConfig, used for its zero fields.
const (
	// DefaultRangesTimeout bounds one download of one list, from the
	// request to the last byte of the body.
	DefaultRangesTimeout = 30 * time.Second
	// DefaultRangesMaxSize is the largest list body accepted, in bytes.
	// Google's largest list is about 100 KiB.
	DefaultRangesMaxSize = 4 << 20
	// DefaultRangesUserAgent is the User-Agent of the downloads.
	DefaultRangesUserAgent = "caddy-robots-ranges/1 (+https://github.com/caddyrobots/caddy-robots)"
	// maxRangesRedirects is how many redirects one download may follow.
	maxRangesRedirects = 3
)

// PublishedList is one IP list an operator publishes for a verification
// method, as recorded in the embedded verification data.
type PublishedList struct {
	// Method is the verification method key (see VerificationMethods).
	Method string
	// URL is where the operator publishes the list.
	URL string
	// Doc is the operator's documentation page the URL was checked against.
	Doc string
	// Confirmed is true when the URL was seen on Doc; false when it comes
	// from secondary sources only (see Note).
	Confirmed bool
	// Note says what was seen where.
	Note string
}

// publishedData is the part of data/verification.json that lists the
// operators' URLs.
type publishedData struct {
	Methods map[string]struct {
		Fetch []struct {
			URL       string `json:"url"`
			Doc       string `json:"doc"`
			Confirmed bool   `json:"confirmed"`
			Note      string `json:"note"`
		} `json:"fetch"`
	} `json:"methods"`
}

var loadPublishedLists = sync.OnceValues(func() ([]PublishedList, error) {
	var pd publishedData
	if err := json.Unmarshal(verificationJSON, &pd); err != nil {
		return nil, fmt.Errorf("agents: embedded verification.json: %w", err)
	}
	var out []PublishedList
	for key, m := range pd.Methods {
		for _, f := range m.Fetch {
			out = append(out, PublishedList{Method: key, URL: f.URL, Doc: f.Doc, Confirmed: f.Confirmed, Note: f.Note})
		}
	}
	slices.SortStableFunc(out, func(a, b PublishedList) int {
		if a.Method < b.Method {
			return -1
		}
		if a.Method > b.Method {
			return 1
		}
		return 0
	})
	return out, nil
})

// PublishedLists returns the lists the operators publish, from the
// embedded verification data, sorted by method (a method's URLs keep their
// order). A method with several URLs (Google's user-triggered fetchers,
// DuckDuckGo) is verified against the union of their lists. It panics only
// if the embedded data is corrupt, which the package's tests rule out.
func PublishedLists() []PublishedList {
	ls, err := loadPublishedLists()
	if err != nil {
		panic(err)
	}
	return slices.Clone(ls)
}

// RangesFetcherConfig configures a RangesFetcher. The zero value fetches
// every published list (PublishedLists) with the defaults.
type RangesFetcherConfig struct {
	// Sources maps a verification method key to the URLs of its list; the
	// method's list is the union of theirs. Nil means the operators' URLs
	// from PublishedLists. URLs must be http or https.
	Sources map[string][]string
	// Client does the requests. Nil means a client with the default
	// transport that follows at most 3 redirects and never from https to
	// http.
	Client *http.Client
	// Timeout bounds one download. Default 30 s.
	Timeout time.Duration
	// MaxSize is the largest body accepted, in bytes; a larger one is an
	// error. Default 4 MiB, at most MaxRangesSize.
	MaxSize int64
	// UserAgent is sent with every request; default DefaultRangesUserAgent.
	UserAgent string
	// Now is the clock, for tests; nil means time.Now.
	Now func() time.Time
}

// RangesFetcher keeps the IP lists of verification methods current by
// downloading them from their publishers, and hands them to Verifiers.
//
// Each download is conditional: the ETag and Last-Modified of the last
// good list are sent back (If-None-Match, If-Modified-Since), so an
// unchanged list costs a 304 and no body. A downloaded list replaces the
// last good one only if it parses, is not empty, holds no prefix broader
// than /8 (IPv4) or /16 (IPv6), and has not shrunk to less than half of
// the last good list's prefixes, unless its creationTime is newer than
// that list's. A rejected or failed download keeps the last good list.
//
// A method's list is ready once every one of its URLs has a good list
// (downloaded or restored with Restore); its date, which decides whether
// it may prove a spoof (VerifierConfig.MaxListAge), is the last time every
// URL's publisher confirmed it (a 200 accepted or a 304), not the list's
// creationTime: an operator serving an unchanged list is vouching for it
// today. Until a method is ready, Verifiers keep their embedded snapshot.
//
// A RangesFetcher is safe for concurrent use; downloads are serialised.
type RangesFetcher struct {
	client    *http.Client
	timeout   time.Duration
	maxSize   int64
	userAgent string
	now       func() time.Time

	fetching sync.Mutex // one round of downloads at a time
	mu       sync.Mutex // guards the sources' state
	methods  []string   // sorted
	sources  map[string][]*rangesSource
}

// rangesSource is one URL of a method and its last good list.
type rangesSource struct {
	url          string
	body         []byte // nil until a good list is known
	list         RangeList
	etag         string
	lastModified string
	confirmed    time.Time // last 200 accepted or 304
}

// RangesFetchResult is the outcome of one download.
type RangesFetchResult string

// The outcomes of a download, also used as metric label values.
const (
	// RangesOK: a new list was accepted.
	RangesOK RangesFetchResult = "ok"
	// RangesNotModified: the publisher answered 304; the last good list
	// stays and counts as confirmed now.
	RangesNotModified RangesFetchResult = "not_modified"
	// RangesRejected: a list arrived but failed validation; the last good
	// one stays.
	RangesRejected RangesFetchResult = "rejected"
	// RangesError: no list arrived (network error, timeout, HTTP status
	// other than 200 and 304, body too large).
	RangesError RangesFetchResult = "error"
)

// RangesFetchReport describes one download.
type RangesFetchReport struct {
	Method string
	URL    string
	Result RangesFetchResult
	// Err says why for RangesRejected and RangesError.
	Err error
	// Prefixes is the number of prefixes of the accepted list (RangesOK).
	Prefixes int
}

// RangesSnapshot is the last good list of one URL with what is needed to
// download it conditionally, for keeping across restarts (see Snapshots
// and Restore).
type RangesSnapshot struct {
	URL          string    `json:"url"`
	Body         []byte    `json:"body"`
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"last_modified,omitempty"`
	Fetched      time.Time `json:"fetched"` // last confirmation by the publisher
}

// NewRangesFetcher returns a RangesFetcher for cfg. It fails for an
// unknown method key, a method without URLs or a URL that is not http or
// https. It does no network I/O.
func NewRangesFetcher(cfg RangesFetcherConfig) (*RangesFetcher, error) {
	f := &RangesFetcher{
		client:    cfg.Client,
		timeout:   cfg.Timeout,
		maxSize:   cfg.MaxSize,
		userAgent: cfg.UserAgent,
		now:       cfg.Now,
		sources:   map[string][]*rangesSource{},
	}
	if f.timeout <= 0 {
		f.timeout = DefaultRangesTimeout
	}
	if f.maxSize <= 0 {
		f.maxSize = DefaultRangesMaxSize
	}
	f.maxSize = min(f.maxSize, MaxRangesSize)
	if f.userAgent == "" {
		f.userAgent = DefaultRangesUserAgent
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.client == nil {
		f.client = &http.Client{CheckRedirect: checkRangesRedirect}
	}
	srcs := cfg.Sources
	if srcs == nil {
		srcs = map[string][]string{}
		for _, p := range PublishedLists() {
			srcs[p.Method] = append(srcs[p.Method], p.URL)
		}
	}
	known := map[string]bool{}
	for _, m := range VerificationMethods() {
		known[m.Key] = true
	}
	for method, urls := range srcs {
		if !known[method] {
			return nil, fmt.Errorf("agents: IP list sources: unknown verification method %q", method)
		}
		if len(urls) == 0 {
			return nil, fmt.Errorf("agents: IP list sources: method %q has no URL", method)
		}
		for _, raw := range urls {
			u, err := url.Parse(raw)
			if err != nil {
				return nil, fmt.Errorf("agents: IP list sources: method %q: %w", method, err)
			}
			if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return nil, fmt.Errorf("agents: IP list sources: method %q: %q is not an http or https URL", method, raw)
			}
			f.sources[method] = append(f.sources[method], &rangesSource{url: raw})
		}
		f.methods = append(f.methods, method)
	}
	slices.Sort(f.methods)
	return f, nil
}

// checkRangesRedirect follows at most maxRangesRedirects redirects and
// never from https to http.
func checkRangesRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRangesRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRangesRedirects)
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("refusing redirect from https to %s", req.URL.Scheme)
	}
	return nil
}

// Methods returns the method keys the fetcher keeps, sorted.
func (f *RangesFetcher) Methods() []string { return slices.Clone(f.methods) }

// FetchAll downloads every list once, method after method, and returns
// one report per URL. Accepted lists are kept; hand them to a Verifier
// with Apply.
func (f *RangesFetcher) FetchAll(ctx context.Context) []RangesFetchReport {
	var out []RangesFetchReport
	for _, m := range f.methods {
		out = append(out, f.Fetch(ctx, m)...)
	}
	return out
}

// Fetch downloads the lists of one method and returns one report per URL;
// an unknown method gives no report.
func (f *RangesFetcher) Fetch(ctx context.Context, method string) []RangesFetchReport {
	f.fetching.Lock()
	defer f.fetching.Unlock()
	srcs := f.sourcesOf(method)
	out := make([]RangesFetchReport, 0, len(srcs))
	for _, s := range srcs {
		rep := f.fetchOne(ctx, s)
		rep.Method = method
		out = append(out, rep)
	}
	return out
}

// sourcesOf returns a copy of the sources of method.
func (f *RangesFetcher) sourcesOf(method string) []*rangesSource {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sources[method])
}

// conditional makes req conditional on s's last list, if s has one, and
// reports whether it does.
func (f *RangesFetcher) conditional(req *http.Request, s *rangesSource) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.body == nil {
		return false
	}
	if s.etag != "" {
		req.Header.Set("If-None-Match", s.etag)
	}
	if s.lastModified != "" {
		req.Header.Set("If-Modified-Since", s.lastModified)
	}
	return true
}

// confirm records that s's list was confirmed current now.
func (f *RangesFetcher) confirm(s *rangesSource) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s.confirmed = f.now()
}

// fetchOne downloads one URL and, if the list is good, keeps it.
func (f *RangesFetcher) fetchOne(ctx context.Context, s *rangesSource) RangesFetchReport {
	rep := RangesFetchReport{URL: s.url}
	fail := func(res RangesFetchResult, err error) RangesFetchReport {
		rep.Result = res
		rep.Err = fmt.Errorf("agents: IP list %s: %w", s.url, err)
		return rep
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return fail(RangesError, err)
	}
	req.Header.Set("User-Agent", f.userAgent)
	req.Header.Set("Accept", "application/jafar+json, application/json;q=0.9, text/plain;q=0.5, */*;q=0.1")
	haveList := f.conditional(req, s)

	resp, err := f.client.Do(req)
	if err != nil {
		return fail(RangesError, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		if !haveList {
			return fail(RangesError, errors.New("304 Not Modified, but no list is known"))
		}
		f.confirm(s)
		rep.Result = RangesNotModified
		return rep
	case http.StatusOK:
	default:
		return fail(RangesError, fmt.Errorf("HTTP status %s", resp.Status))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxSize+1))
	if err != nil {
		return fail(RangesError, fmt.Errorf("reading body: %w", err))
	}
	if int64(len(body)) > f.maxSize {
		return fail(RangesError, fmt.Errorf("body larger than %d bytes", f.maxSize))
	}
	if err := checkJafarContentType(resp.Header.Get("Content-Type")); err != nil {
		return fail(RangesRejected, err)
	}
	list, err := ParseRangeList(body)
	if err != nil {
		return fail(RangesRejected, err)
	}
	if err := CheckCoverage(list.Prefixes); err != nil {
		return fail(RangesRejected, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.body != nil {
		if err := checkShrink(s.list, list); err != nil {
			return fail(RangesRejected, err)
		}
	}
	s.body = body
	s.list = list
	s.etag = resp.Header.Get("ETag")
	s.lastModified = resp.Header.Get("Last-Modified")
	s.confirmed = f.now()
	rep.Result = RangesOK
	rep.Prefixes = len(list.Prefixes)
	return rep
}

// checkJafarContentType refuses a body advertised as application/jafar+json
// with a major version this package does not understand.
func checkJafarContentType(ct string) error {
	if ct == "" {
		return nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/jafar+json" {
		return nil // not the draft's media type: the body decides
	}
	if err := CheckFormatVersion(params["version"]); err != nil {
		return fmt.Errorf("content type %q: %w", ct, err)
	}
	return nil
}

// checkShrink refuses a list with less than half the prefixes of the last
// good one, unless it says it was created later.
func checkShrink(old, next RangeList) error {
	if 2*len(next.Prefixes) >= len(old.Prefixes) {
		return nil
	}
	if !next.CreationTime.IsZero() && !old.CreationTime.IsZero() && next.CreationTime.After(old.CreationTime) {
		return nil
	}
	return fmt.Errorf("list shrank from %d to %d prefixes without a newer creationTime", len(old.Prefixes), len(next.Prefixes))
}

// Ranges returns the current list of method: the union of its URLs' last
// good lists and the oldest of their confirmation times. ok is false until
// every URL of the method has a good list.
func (f *RangesFetcher) Ranges(method string) (prefixes []netip.Prefix, asOf time.Time, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	srcs := f.sources[method]
	if len(srcs) == 0 {
		return nil, time.Time{}, false
	}
	for _, s := range srcs {
		if s.body == nil {
			return nil, time.Time{}, false
		}
		prefixes = append(prefixes, s.list.Prefixes...)
		if asOf.IsZero() || s.confirmed.Before(asOf) {
			asOf = s.confirmed
		}
	}
	return prefixes, asOf, true
}

// Apply gives v the current list of every ready method (see Ranges) with
// its date, replacing what v used for those methods; methods not ready are
// left alone. It returns the methods applied, sorted.
func (f *RangesFetcher) Apply(v *Verifier) ([]string, error) {
	var applied []string
	var errs []error
	for _, m := range f.methods {
		prefixes, asOf, ok := f.Ranges(m)
		if !ok {
			continue
		}
		if err := v.SetRanges(m, prefixes, asOf); err != nil {
			errs = append(errs, err)
			continue
		}
		applied = append(applied, m)
	}
	return applied, errors.Join(errs...)
}

// Snapshots returns the last good list of each URL of method that has
// one, for storing.
func (f *RangesFetcher) Snapshots(method string) []RangesSnapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []RangesSnapshot
	for _, s := range f.sources[method] {
		if s.body == nil {
			continue
		}
		out = append(out, RangesSnapshot{
			URL: s.url, Body: slices.Clone(s.body), ETag: s.etag,
			LastModified: s.lastModified, Fetched: s.confirmed,
		})
	}
	return out
}

// Restore takes lists kept by Snapshots (for example from storage, after a
// restart) as the last good lists of method's URLs. A snapshot of a URL the
// method does not use is ignored, one older than the list the fetcher
// already has is ignored, and one whose body is not a valid list is an
// error (the others are still taken). It returns how many were taken.
func (f *RangesFetcher) Restore(method string, snaps []RangesSnapshot) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	var errs []error
	for _, snap := range snaps {
		i := slices.IndexFunc(f.sources[method], func(s *rangesSource) bool { return s.url == snap.URL })
		if i < 0 {
			continue
		}
		s := f.sources[method][i]
		if s.body != nil && !snap.Fetched.After(s.confirmed) {
			continue
		}
		list, err := ParseRangeList(snap.Body)
		if err == nil {
			err = CheckCoverage(list.Prefixes)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("agents: stored IP list %s: %w", snap.URL, err))
			continue
		}
		s.body = slices.Clone(snap.Body)
		s.list = list
		s.etag = snap.ETag
		s.lastModified = snap.LastModified
		s.confirmed = snap.Fetched
		n++
	}
	return n, errors.Join(errs...)
}
