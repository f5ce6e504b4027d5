package webbotauth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/dunglas/httpsfv"
)

// errMissingComponent marks a covered component the request does not carry.
var errMissingComponent = errors.New("missing covered component")

// signatureBase builds the RFC 9421 §2.5 signature base of r for the covered
// components and signature parameters of one Signature-Input member.
//
// Only the components this package needs are implemented: the derived
// components @method, @target-uri, @authority, @scheme, @request-target,
// @path and @query, plain header fields, and the ";key" parameter that
// selects one member of a Dictionary field. Any other derived component or
// component parameter is refused with an error, as RFC 9421 §3.2 requires of a
// verifier that does not understand it.
func signatureBase(r *http.Request, sigParams httpsfv.InnerList) ([]byte, error) {
	var b strings.Builder
	b.Grow(512)
	seen := make(map[string]struct{}, len(sigParams.Items))
	for _, c := range sigParams.Items {
		name, ok := c.Value.(string)
		if !ok {
			return nil, fmt.Errorf("component identifier %v is not a string", c.Value)
		}
		id, err := httpsfv.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("serialising component identifier %q: %w", name, err)
		}
		if _, dup := seen[id]; dup {
			return nil, fmt.Errorf("component %s is covered twice", id)
		}
		seen[id] = struct{}{}
		value, err := componentValue(r, name, c.Params)
		if err != nil {
			return nil, err
		}
		b.WriteString(id)
		b.WriteString(": ")
		b.WriteString(value)
		b.WriteByte('\n')
	}
	params, err := httpsfv.Marshal(sigParams)
	if err != nil {
		return nil, fmt.Errorf("serialising signature parameters: %w", err)
	}
	b.WriteString(`"@signature-params": `)
	b.WriteString(params)
	return []byte(b.String()), nil
}

// componentValue returns the value of one covered component of r.
func componentValue(r *http.Request, name string, params *httpsfv.Params) (string, error) {
	var key string
	hasKey := false
	if params != nil {
		for _, p := range params.Names() {
			v, _ := params.Get(p)
			switch p {
			case "key":
				s, ok := v.(string)
				if !ok {
					return "", fmt.Errorf("component %q: key parameter is not a string", name)
				}
				key, hasKey = s, true
			default:
				return "", fmt.Errorf("component %q: unsupported parameter %q", name, p)
			}
		}
	}
	if strings.HasPrefix(name, "@") {
		if hasKey {
			return "", fmt.Errorf("component %q: key parameter on a derived component", name)
		}
		return derivedComponent(r, name)
	}
	if name == "" || name != strings.ToLower(name) {
		return "", fmt.Errorf("component %q: field names must be lowercase", name)
	}
	value, ok := fieldValue(r, name)
	if !ok {
		return "", fmt.Errorf("%w: header %q", errMissingComponent, name)
	}
	if !hasKey {
		return value, nil
	}
	dict, err := httpsfv.UnmarshalDictionary([]string{value})
	if err != nil {
		return "", fmt.Errorf("component %q;key=%q: header is not a dictionary: %w", name, key, err)
	}
	member, ok := dict.Get(key)
	if !ok {
		return "", fmt.Errorf("%w: %q has no member %q", errMissingComponent, name, key)
	}
	s, err := httpsfv.Marshal(member)
	if err != nil {
		return "", fmt.Errorf("component %q;key=%q: %w", name, key, err)
	}
	return s, nil
}

// fieldValue returns the RFC 9421 §2.1 value of a header field: every field
// line's value, trimmed, joined by ", ".
func fieldValue(r *http.Request, name string) (string, bool) {
	if name == "host" {
		if h := requestAuthority(r); h != "" {
			return h, true
		}
		return "", false
	}
	values := r.Header.Values(name)
	if len(values) == 0 {
		return "", false
	}
	if len(values) == 1 {
		return strings.TrimSpace(values[0]), true
	}
	trimmed := make([]string, len(values))
	for i, v := range values {
		trimmed[i] = strings.TrimSpace(v)
	}
	return strings.Join(trimmed, ", "), true
}

// derivedComponent returns the value of an RFC 9421 §2.2 derived component.
func derivedComponent(r *http.Request, name string) (string, error) {
	switch name {
	case "@method":
		if r.Method == "" {
			return http.MethodGet, nil
		}
		return r.Method, nil
	case "@authority":
		a := requestAuthority(r)
		if a == "" {
			return "", fmt.Errorf("%w: @authority (no Host)", errMissingComponent)
		}
		return a, nil
	case "@scheme":
		return requestScheme(r), nil
	case "@target-uri":
		a := requestAuthority(r)
		if a == "" {
			return "", fmt.Errorf("%w: @target-uri (no Host)", errMissingComponent)
		}
		return requestScheme(r) + "://" + a + requestPath(r) + rawQuery(r), nil
	case "@request-target":
		if r.RequestURI != "" {
			return r.RequestURI, nil
		}
		return r.URL.RequestURI(), nil
	case "@path":
		return requestPath(r), nil
	case "@query":
		q := rawQuery(r)
		if q == "" {
			return "?", nil
		}
		return q, nil
	}
	return "", fmt.Errorf("unsupported derived component %q", name)
}

// requestScheme is the lowercase scheme of the target URI.
func requestScheme(r *http.Request) string {
	if r.URL != nil && r.URL.Scheme != "" {
		return strings.ToLower(r.URL.Scheme)
	}
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// requestAuthority is the normalised authority of the target URI
// (RFC 9421 §2.2.3): lowercase, without the scheme's default port.
func requestAuthority(r *http.Request) string {
	h := r.Host
	if h == "" && r.URL != nil {
		h = r.URL.Host
	}
	h = strings.ToLower(h)
	switch requestScheme(r) {
	case "https":
		h = strings.TrimSuffix(h, ":443")
	case "http":
		h = strings.TrimSuffix(h, ":80")
	}
	return h
}

// requestPath is the absolute path of the target URI, "/" when empty.
func requestPath(r *http.Request) string {
	if r.URL == nil {
		return "/"
	}
	p := r.URL.EscapedPath()
	if p == "" {
		return "/"
	}
	return p
}

// rawQuery is "?" and the query of the target URI, or "" when it has none.
func rawQuery(r *http.Request) string {
	if r.URL == nil || (r.URL.RawQuery == "" && !r.URL.ForceQuery) {
		return ""
	}
	return "?" + r.URL.RawQuery
}
