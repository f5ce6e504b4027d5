// Package admin is what the admin API's routes under /robots/ show and do:
// the status page and its JSON, the bans in force and lifting them,
// reloading robots.txt, withdrawing versions, and checking what a request
// would get (POST /robots/check).
//
// It knows nothing of Caddy. The root package registers the admin module
// (admin.api.robots), describes each running robots handler as a Site for
// every request, finds and judges a check's request through its Checker,
// and turns an Error into the caddy.APIError Caddy's admin server answers
// with.
package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/sites"
)

// Limits of the admin API.
const (
	// Top is how many crawlers and offenders a Site lists.
	Top         = 10
	pingTimeout = 100 * time.Millisecond // a store's health check
	storeWait   = 5 * time.Second        // listing or lifting bans
)

// Site is one running robots handler (one site block's) as the admin API
// sees it: a snapshot the root takes for each request. A Site's position
// in the list the API is given is its handler index in /robots/status and
// /robots/check.
type Site struct {
	// Source, File and Mode are the handler's configuration.
	Source, File, Mode string
	// Unavailable is the rule for a site with no copy of robots.txt yet:
	// disallow (crawlers get 503) or allow.
	Unavailable string
	// Grace is how long a replaced robots.txt version still counts.
	Grace time.Duration
	// Strikes is the handler's strike policy.
	Strikes state.StrikePolicy
	// Loader is the handler's site table; nil when it has none.
	Loader *sites.Loader
	// Store is the throttle and strike store; handlers may share one.
	// StoreType is its type: memory or redis.
	Store     state.Store
	StoreType string
	// Verifier verifies crawler claims; Ranges are the IP lists
	// configured with verify ranges (method → file or URL).
	Verifier *agents.Verifier
	Ranges   map[string]string
	// Scope names the site block; nil until a request found it.
	Scope *Scope
	// Block names the site block from the running config's routes; nil
	// when the handler is in none (and no request found it).
	Block *Block
	// TopCrawlers and TopOffenders are the handler's (or its site
	// block's) decision counts: at most Top crawlers with the most
	// requests, and with the most refusals.
	TopCrawlers, TopOffenders []CrawlerCount
	// RefusedUnavailable is how many bot requests were refused because
	// the site's robots.txt was unavailable, every crawler's.
	RefusedUnavailable uint64
	// CountsSince is when the site block's counts (top crawlers,
	// offenders, History) started: they survive config reloads that keep
	// the site block. Zero when nothing counts yet.
	CountsSince time.Time
	// History is the site block's requests over the last hour and day.
	History HistoryStatus
	// ConfigWarnings are the warnings about the configuration, as logged.
	ConfigWarnings []string
	// UntrustedProxy is the first peer found forwarding for others while
	// the server does not trust it; invalid when none was.
	UntrustedProxy netip.Addr
	// TLS is what the site block's tls signal saw (TLSWatch.Status).
	TLS TLSStatus
}

// Block names the site block a handler serves, as the running config's
// routes place it: what an operator wrote, instead of a handler index.
type Block struct {
	// Name is the block for people: "a.example, b.example on :443", or
	// "* on :8080" for a catch-all.
	Name string
	// Hosts are the block's host patterns (none: a catch-all); Listen
	// its server's addresses.
	Hosts  []string
	Listen string
}

// Scope names the site block a handler serves, as bans record it.
type Scope struct {
	// Key is the state's Site of the block's strikes and bans.
	Key string
	// Site is the block's host patterns ("*" for a catch-all); Listen
	// its server's addresses.
	Site, Listen string
}

// CrawlerCount is one crawler's decision counts.
type CrawlerCount struct {
	// Name is the crawler's name, or "(no User-Agent name)" for bots whose
	// User-Agent names nothing.
	Name string `json:"crawler"`
	// Claim is "unverified claim" when the crawler publishes a way to
	// verify it and these requests were not verified, "spoofed" when their
	// addresses are provably not its operator's; empty otherwise.
	Claim   string `json:"claim,omitempty"`
	Allowed uint64 `json:"allowed"`
	Refused uint64 `json:"refused"`
	// WouldRefuse are the requests served because the handler (or the
	// signal that judged them) is in mode log, that enforce would have
	// refused or throttled: apart from Refused, which counts refusals.
	WouldRefuse uint64 `json:"would_refuse,omitempty"`
	// Retries are requests that came back inside their Retry-After.
	Retries uint64 `json:"immediate_retries"`
	// Unavailable are the requests refused (503) because the site's
	// robots.txt was unavailable: no offence of the crawler's, so not in
	// Refused, and never what lists a crawler among the offenders.
	Unavailable uint64 `json:"refused_unavailable,omitempty"`
}

// API serves the admin routes under /robots/ (see the root's adminAPI for
// the list).
type API struct {
	// Sites describes the running handlers, oldest first.
	Sites func() []Site
	// Checker finds and judges the request of POST /robots/check.
	Checker Checker
	// Lifted announces a ban an admin request lifted, by the client at by.
	Lifted func(id state.Identity, key, by string)
	// Logger logs the bans lifted, with who asked.
	Logger *zap.Logger
	// DefaultAddress is the admin endpoint's address, for the commands
	// the status page suggests when the request had no Host.
	DefaultAddress string
}

// Error is an admin request's failure and the HTTP status to answer it
// with.
type Error struct {
	Status int
	Err    error
}

func (e Error) Error() string { return e.Err.Error() }

// Unwrap returns the failure.
func (e Error) Unwrap() error { return e.Err }

// Serve answers one admin request under /robots/. An error is an Error
// when the request is at fault or a store could not answer; an error of
// the Checker is returned as it is.
func (a *API) Serve(w http.ResponseWriter, r *http.Request) error {
	path := r.URL.Path
	switch {
	case path == "/robots/" || path == "/robots":
		if err := allowMethods(w, r, http.MethodGet, http.MethodHead); err != nil {
			return err
		}
		return a.servePage(w, r)
	case path == "/robots/status":
		if err := allowMethods(w, r, http.MethodGet); err != nil {
			return err
		}
		return WriteJSON(w, Status(r.Context(), a.Sites(), time.Now()))
	case path == "/robots/check":
		if err := allowMethods(w, r, http.MethodPost); err != nil {
			return err
		}
		return a.serveCheck(w, r)
	case path == "/robots/bans":
		if err := allowMethods(w, r, http.MethodGet, http.MethodDelete); err != nil {
			return err
		}
		if r.Method == http.MethodDelete {
			return a.serveUnbanWhere(w, r)
		}
		return WriteJSON(w, Bans(r.Context(), a.Sites(), time.Now()))
	case strings.HasPrefix(path, "/robots/bans/"):
		if err := allowMethods(w, r, http.MethodDelete); err != nil {
			return err
		}
		return a.serveUnban(w, r)
	case path == "/robots/reload":
		if err := allowMethods(w, r, http.MethodPost); err != nil {
			return err
		}
		return a.serveReload(w, r)
	case strings.HasPrefix(path, "/robots/versions/"):
		if err := allowMethods(w, r, http.MethodDelete); err != nil {
			return err
		}
		return a.serveWithdraw(w, r)
	}
	return Error{http.StatusNotFound, fmt.Errorf("robots: no admin route %s (see /robots/ for the status page)", path)}
}

// allowMethods refuses a request whose method is not one of methods.
func allowMethods(w http.ResponseWriter, r *http.Request, methods ...string) error {
	for _, m := range methods {
		if r.Method == m {
			return nil
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	return Error{http.StatusMethodNotAllowed, fmt.Errorf("robots: method %s not allowed for %s (use %s)", r.Method, r.URL.Path, strings.Join(methods, " or "))}
}

// WriteJSON writes v as the admin API's JSON answer: indented, never
// cached.
func WriteJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "\t")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("robots: writing admin response: %w", err)
	}
	return nil
}
