package sites

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// LoaderUserAgent is the User-Agent of the loader's virtual request for
// /robots.txt, as access logs show it (the audit lists it apart).
const LoaderUserAgent = "caddy-robots (robots.txt loader)"

// maxRedirects is how many redirects the loader follows (RFC 9309
// §2.3.1.2).
const maxRedirects = 5

// loaderKey marks the loader's own virtual request for /robots.txt. It is
// an unexported context key, so nothing outside the package can forge it,
// and no client can: a context is not something a client sends.
type loaderKey struct{}

// loaderRemoteAddr is the client address of the virtual request: loopback,
// so that remote_ip rules treat it as local, and port 0, which no TCP
// client has, so IsLoaderRequest rules out every real request by comparing
// one string before it walks the context.
const loaderRemoteAddr = "127.0.0.1:0"

// IsLoaderRequest reports whether r is a loader's own virtual GET for
// /robots.txt (or one of its redirects), which the handler must let pass
// unjudged. For every other request it costs one string comparison.
func IsLoaderRequest(r *http.Request) bool {
	return r.RemoteAddr == loaderRemoteAddr && r.Context().Value(loaderKey{}) != nil
}

// fetchResult is the outcome of the virtual request.
type fetchResult struct {
	status int
	body   []byte
	// finalURL is the URL whose answer this is when a redirect was
	// followed; "" when the site answered /robots.txt itself.
	finalURL string
	// gaveUp is set when the answer is "no rules" only because the
	// redirects ran past five, looped or led to a URL that is not http or
	// https; why says which.
	gaveUp bool
	why    string
}

// fetchVirtual sends GET path through srv as if a client had asked for it
// with the given Host and scheme, following redirects as RFC 9309
// §2.3.1.2 asks: at most five in all, through srv while they stay on the
// site, and with a real HTTP client (fetchRemote) once one leads to
// another host or port. A body is returned only when it arrived whole:
// the length the response declared was reached and nothing aborted it. At
// most enforce.MaxSize+1 bytes are kept, so the parser knows when the cap
// cut a line.
func fetchVirtual(ctx context.Context, srv http.Handler, host string, https bool, path string) (fetchResult, error) {
	seen := map[string]bool{}
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(context.WithValue(ctx, loaderKey{}, true), http.MethodGet, path, nil)
		if err != nil {
			return fetchResult{}, fmt.Errorf("building request: %w", err)
		}
		req.Host = host
		req.RemoteAddr = loaderRemoteAddr
		req.RequestURI = path
		if https {
			req.URL.Scheme = "https"
			req.TLS = &tls.ConnectionState{HandshakeComplete: true, ServerName: policy.HostOf(host)}
			req.Header.Set("X-Forwarded-Proto", "https")
		}
		req.Header.Set("Accept-Encoding", "identity")
		req.Header.Set("User-Agent", LoaderUserAgent)
		w := newCaptureWriter(enforce.MaxSize + 1)
		done := make(chan struct{})
		var aborted any
		go func() {
			defer close(done)
			defer func() { aborted = recover() }()
			srv.ServeHTTP(w, req)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			return fetchResult{}, fmt.Errorf("robots.txt request: %w", ctx.Err())
		}
		here := absoluteURL(host, https, path)
		seen[here.String()] = true
		status := w.statusCode()
		if status >= 300 && status < 400 && w.header.Get("Location") != "" {
			target, res, ok := nextHop(here, w.header.Get("Location"), hop, seen)
			if !ok {
				return res, nil
			}
			if !sameSite(here, target) {
				return fetchRemote(ctx, target, hop+1, seen)
			}
			path, https = target.RequestURI(), target.Scheme == "https"
			continue
		}
		res := fetchResult{status: status, body: w.buf.Bytes()}
		if hop > 0 {
			res.finalURL = here.String()
		}
		if err := w.complete(aborted); err != nil && status >= 200 && status < 300 {
			return fetchResult{status: status, finalURL: res.finalURL}, err
		}
		return res, nil
	}
}

// nextHop resolves the Location of the answer from current, which was
// redirect number hop+1. It gives up (ok false, res saying why: no rules)
// past maxRedirects, on a URL already visited, or on a scheme other than
// http and https: RFC 9309 §2.3.1.2 lets a crawler assume the file is
// unavailable then.
func nextHop(current *url.URL, location string, hop int, seen map[string]bool) (target *url.URL, res fetchResult, ok bool) {
	giveUp := func(why string) (*url.URL, fetchResult, bool) {
		return nil, fetchResult{status: http.StatusNotFound, gaveUp: true, why: why, finalURL: current.String()}, false
	}
	if hop >= maxRedirects {
		return giveUp("more than 5 redirects")
	}
	loc, err := url.Parse(location)
	if err != nil {
		return giveUp(fmt.Sprintf("bad redirect location %q from %s", location, current))
	}
	target = current.ResolveReference(loc)
	target.Fragment = ""
	if target.Scheme != "http" && target.Scheme != "https" || target.Host == "" {
		return giveUp(fmt.Sprintf("redirected to %q, which is not an http or https URL", target.String()))
	}
	if seen[target.String()] {
		return giveUp("redirect loop at " + target.String())
	}
	return target, fetchResult{}, true
}

// fetchRemote follows a redirect that left the site with a real HTTP
// client, as a crawler would: the same User-Agent, redirects counted
// with those already followed (hops) up to five, the caller's deadline
// (the fetch timeout) over all of them, and at most enforce.MaxSize+1
// bytes of body. Any host is fetched, private addresses included: the
// redirect is the site's own answer, which its operator controls.
func fetchRemote(ctx context.Context, target *url.URL, hops int, seen map[string]bool) (fetchResult, error) {
	for hop := hops; ; hop++ {
		seen[target.String()] = true
		resp, err := remoteGet(ctx, target)
		if err != nil {
			return fetchResult{finalURL: target.String()}, err
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != "" {
			resp.Body.Close()
			next, res, ok := nextHop(target, resp.Header.Get("Location"), hop, seen)
			if !ok {
				return res, nil
			}
			target = next
			continue
		}
		return readRemote(resp, target)
	}
}

// readRemote reads the final answer of fetchRemote, at most
// enforce.MaxSize+1 bytes of it. A 2xx body that breaks off is an error:
// half a robots.txt is not the site's rules.
func readRemote(resp *http.Response, u *url.URL) (fetchResult, error) {
	defer resp.Body.Close()
	res := fetchResult{status: resp.StatusCode, finalURL: u.String()}
	body, err := io.ReadAll(io.LimitReader(resp.Body, enforce.MaxSize+1))
	if err != nil && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return res, fmt.Errorf("robots.txt response from %s incomplete after %d bytes: %w", u, len(body), err)
	}
	res.body = body
	return res, nil
}

// remoteClient is the client of fetchRemote: the default transport
// (proxy settings from the environment), redirects left to the loader.
var remoteClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// remoteGet sends the loader's GET for u.
func remoteGet(ctx context.Context, u *url.URL) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("building request for %s: %w", u, err)
	}
	req.Header.Set("User-Agent", LoaderUserAgent)
	resp, err := remoteClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("robots.txt redirected to %s: %w", u, err)
	}
	return resp, nil
}

// absoluteURL is the URL of path on the site named by the Host header
// host.
func absoluteURL(host string, https bool, path string) *url.URL {
	u := &url.URL{Scheme: "http", Host: host}
	if https {
		u.Scheme = "https"
	}
	if p, err := url.ParseRequestURI(path); err == nil {
		u.Path, u.RawPath, u.RawQuery = p.Path, p.RawPath, p.RawQuery
	} else {
		u.Path = path
	}
	return u
}

// sameSite reports whether target can be asked through the server that
// answered current: the same host, and the same port or none named (a
// move between http and https on their default ports stays on the site).
// Another port is another authority (RFC 9309 §2.3), which this server
// may not be listening on.
func sameSite(current, target *url.URL) bool {
	if policy.HostOf(target.Host) != policy.HostOf(current.Host) {
		return false
	}
	return target.Port() == "" || portOf(target) == portOf(current)
}

// portOf is u's port, or its scheme's default.
func portOf(u *url.URL) string {
	switch {
	case u.Port() != "":
		return u.Port()
	case u.Scheme == "https":
		return "443"
	}
	return "80"
}

// siteName is the host of a Host header as a site key keeps it:
// lower-cased, without port or brackets, a trailing dot kept. host is the
// handler's policy.HostOf(hostport), which callers have at hand (a bot's request
// parses its Host once).
func siteName(hostport, host string) string {
	if strings.HasSuffix(hostport, ".") || strings.Contains(hostport, ".:") {
		return host + "."
	}
	return host
}

// siteHost is the Host header the loader sends for a site: its host name as
// the site key has it, with port unless port is 0, 80 or 443; an IPv6
// address in brackets.
func siteHost(host string, port int) string {
	if strings.IndexByte(host, ':') >= 0 {
		host = "[" + host + "]"
	}
	if port == 0 || port == 80 || port == 443 {
		return host
	}
	return host + ":" + strconv.Itoa(port)
}

// captureWriter is a standalone response writer for the virtual request:
// its own header map, a status, and a body capped at limit bytes. Past the
// cap, writes fail so the upstream stops sending.
type captureWriter struct {
	header   http.Header
	status   int
	buf      bytes.Buffer
	limit    int
	written  int64 // bytes the handler wrote, kept or not
	declared int64 // Content-Length of the response; -1 when not given
	overflow bool
}

func newCaptureWriter(limit int) *captureWriter {
	return &captureWriter{header: http.Header{}, limit: limit, declared: -1}
}

func (w *captureWriter) Header() http.Header { return w.header }

func (w *captureWriter) WriteHeader(code int) {
	if code >= 200 && w.status == 0 {
		w.status = code
		if cl := w.header.Get("Content-Length"); cl != "" {
			if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
				w.declared = n
			}
		}
	}
}

var errBodyTooLarge = errors.New("robots.txt body exceeds the size limit")

func (w *captureWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	room := w.limit - w.buf.Len()
	if len(p) > room {
		w.buf.Write(p[:max(room, 0)])
		w.written += int64(max(room, 0))
		w.overflow = true
		return max(room, 0), errBodyTooLarge
	}
	w.written += int64(len(p))
	return w.buf.Write(p)
}

// complete reports why the body is not whole, or nil. aborted is what the
// handler chain panicked with (reverse_proxy aborts with
// http.ErrAbortHandler when the backend's body breaks off). A body cut by
// our own cap is whole enough: everything the parser reads arrived.
func (w *captureWriter) complete(aborted any) error {
	if w.overflow {
		return nil
	}
	if aborted != nil {
		return fmt.Errorf("robots.txt response aborted after %d bytes: %v", w.written, aborted)
	}
	if w.declared >= 0 && w.written != w.declared {
		return fmt.Errorf("robots.txt response incomplete: %d of %d bytes", w.written, w.declared)
	}
	return nil
}

func (w *captureWriter) statusCode() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
