package sites

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
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
	// offSite is set when the answer is "no rules" only because the
	// redirects left the site or looped; why says which.
	offSite bool
	why     string
}

// fetchVirtual sends GET path through srv as if a client had asked for it
// with the given Host and scheme, following same-site redirects (at most
// five). A body is returned only when it arrived whole: the length the
// response declared was reached and nothing aborted it. At most
// enforce.MaxSize+1 bytes are kept, so the parser knows when the cap cut a
// line.
func fetchVirtual(ctx context.Context, srv http.Handler, host string, https bool, path string) (fetchResult, error) {
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
		status := w.statusCode()
		if status >= 300 && status < 400 && w.header.Get("Location") != "" {
			if hop >= maxRedirects {
				// RFC 9309 §2.3.1.2: past five redirects a crawler may
				// assume the file is unavailable, i.e. no rules.
				return fetchResult{status: http.StatusNotFound, offSite: true, why: "more than 5 redirects"}, nil
			}
			next, nextHTTPS, sameSite, err := resolveRedirect(host, https, path, w.header.Get("Location"))
			if err != nil {
				return fetchResult{}, err
			}
			if !sameSite {
				// Another site's file cannot be read from inside this
				// server: treat it as unavailable (no rules), which never
				// blocks a compliant crawler.
				return fetchResult{status: http.StatusNotFound, offSite: true, why: "redirected to another site"}, nil
			}
			path, https = next, nextHTTPS
			continue
		}
		if err := w.complete(aborted); err != nil && status >= 200 && status < 300 {
			return fetchResult{status: status}, err
		}
		return fetchResult{status: status, body: w.buf.Bytes()}, nil
	}
}

// resolveRedirect resolves a Location against the current request; it
// reports the next path, whether it is HTTPS, and whether the target is on
// the same host.
func resolveRedirect(host string, https bool, path, location string) (string, bool, bool, error) {
	scheme := "http"
	if https {
		scheme = "https"
	}
	base := &url.URL{Scheme: scheme, Host: host, Path: path}
	loc, err := url.Parse(location)
	if err != nil {
		return "", false, false, fmt.Errorf("bad redirect location %q: %w", location, err)
	}
	target := base.ResolveReference(loc)
	if policy.HostOf(target.Host) != policy.HostOf(host) {
		return "", false, false, nil
	}
	return target.RequestURI(), target.Scheme == "https", true, nil
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
