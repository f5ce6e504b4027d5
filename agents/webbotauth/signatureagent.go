package webbotauth

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/dunglas/httpsfv"
)

// WellKnownPath is the well-known URI of an agent's key directory
// (draft-ietf-webbotauth-httpsig-protocol, "Well-Known
// 'http-message-signatures-directory' URI").
const WellKnownPath = "/.well-known/http-message-signatures-directory"

// DirectoryMediaType is the media type of a key directory served at
// WellKnownPath.
const DirectoryMediaType = "application/http-message-signatures-directory+json"

// signatureAgentHeader is the parsed Signature-Agent field of one request.
type signatureAgentHeader struct {
	present bool
	legacy  string              // the bare sf-string form, when legacy
	isDict  bool                // the Dictionary form
	dict    *httpsfv.Dictionary // members, when isDict
	err     error               // why the field could not be parsed
	raw     string
}

// parseSignatureAgent reads the Signature-Agent field in either of its forms:
// an RFC 9651 Dictionary whose members are sf-strings, or the legacy bare
// sf-string. The two are told apart by their first character, as the draft
// says: a String begins with a double quote, a Dictionary key cannot.
func parseSignatureAgent(values []string) signatureAgentHeader {
	h := signatureAgentHeader{present: len(values) > 0}
	if !h.present {
		return h
	}
	h.raw = strings.TrimSpace(strings.Join(values, ","))
	if strings.HasPrefix(h.raw, `"`) {
		item, err := httpsfv.UnmarshalItem(values)
		if err != nil {
			h.err = fmt.Errorf("Signature-Agent: %w", err)
			return h
		}
		s, ok := item.Value.(string)
		if !ok {
			h.err = errors.New("Signature-Agent: not a string")
			return h
		}
		h.legacy = s
		return h
	}
	d, err := httpsfv.UnmarshalDictionary(values)
	if err != nil {
		h.err = fmt.Errorf("Signature-Agent: %w", err)
		return h
	}
	h.isDict, h.dict = true, d
	return h
}

// agentRef is where a signature's keys are to be found.
type agentRef struct {
	fetchURL string // the URL the verifier fetches
	id       string // the identifier the request is attributed to
	origin   string // the origin of fetchURL
}

// errUnsupportedAgent marks a Signature-Agent member this package cannot
// resolve (an unknown type parameter): not evidence either way.
var errUnsupportedAgent = errors.New("unsupported Signature-Agent member")

// memberFor returns the Signature-Agent member a signature covers, given the
// signature's covered components. ok is false when the signature covers no
// member of the field (a protocol violation when the field is present).
func (h signatureAgentHeader) memberFor(covered []httpsfv.Item) (value string, params *httpsfv.Params, ok bool, err error) {
	for _, c := range covered {
		if name, _ := c.Value.(string); name != "signature-agent" {
			continue
		}
		k, hasKey := c.Params.Get("key")
		if h.isDict {
			if !hasKey {
				// The whole dictionary is covered: usable only when
				// it has exactly one member.
				names := h.dict.Names()
				if len(names) != 1 {
					return "", nil, false, fmt.Errorf("signature covers the whole Signature-Agent dictionary of %d members, not one member", len(names))
				}
				k = names[0]
			}
			key, _ := k.(string)
			m, found := h.dict.Get(key)
			if !found {
				return "", nil, false, fmt.Errorf("%w: Signature-Agent has no member %q", errMissingComponent, key)
			}
			item, isItem := m.(httpsfv.Item)
			s, isString := item.Value.(string)
			if !isItem || !isString {
				return "", nil, false, fmt.Errorf("Signature-Agent member %q is not a string", key)
			}
			return s, item.Params, true, nil
		}
		if hasKey {
			return "", nil, false, fmt.Errorf("%w: Signature-Agent is a bare string, the signature covers a dictionary member", errMissingComponent)
		}
		return h.legacy, nil, true, nil
	}
	return "", nil, false, nil
}

// resolveAgent turns a Signature-Agent member into the URL to fetch and the
// identifier to attribute the request to.
//
// Members without a type parameter, or with type=directory, name an origin;
// its directory is at WellKnownPath and the identifier is the origin. A value
// that already is the well-known URI is read the same way. A value with any
// other path, or type=jwks_uri, is fetched as sent (query kept) and
// identified by the URL without query and fragment. Other type values are
// not supported.
func resolveAgent(value string, params *httpsfv.Params, allowHTTP func(origin string) bool) (agentRef, error) {
	typ := "directory"
	if params != nil {
		if t, ok := params.Get("type"); ok {
			switch t := t.(type) {
			case httpsfv.Token:
				typ = string(t)
			case string:
				typ = t
			default:
				return agentRef{}, fmt.Errorf("%w: type parameter %v", errUnsupportedAgent, t)
			}
		}
	}
	if typ != "directory" && typ != "jwks_uri" {
		return agentRef{}, fmt.Errorf("%w: type=%s", errUnsupportedAgent, typ)
	}
	u, err := url.Parse(value)
	if err != nil {
		return agentRef{}, fmt.Errorf("Signature-Agent %q is not a URI: %w", value, err)
	}
	origin, err := normaliseOrigin(u)
	if err != nil {
		return agentRef{}, fmt.Errorf("Signature-Agent %q: %w", value, err)
	}
	if u.Scheme != "https" && !allowHTTP(origin) {
		return agentRef{}, fmt.Errorf("Signature-Agent %q: scheme must be https", value)
	}
	path := u.EscapedPath()
	if typ == "directory" && (path == "" || path == "/" || path == WellKnownPath) {
		return agentRef{fetchURL: origin + WellKnownPath, id: origin, origin: origin}, nil
	}
	id := origin + path
	fetch := id
	if u.RawQuery != "" {
		fetch += "?" + u.RawQuery
	}
	return agentRef{fetchURL: fetch, id: id, origin: origin}, nil
}

// NormaliseOrigin returns the ASCII serialisation of the origin of rawURL
// ("https://agent.example", lowercase, without the scheme's default port), the
// form used as Result.Agent and as a key of Config.Agents.
func NormaliseOrigin(rawURL string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return "", fmt.Errorf("parsing origin %q: %w", rawURL, err)
	}
	o, err := normaliseOrigin(u)
	if err != nil {
		return "", fmt.Errorf("origin %q: %w", rawURL, err)
	}
	return o, nil
}

func normaliseOrigin(u *url.URL) (string, error) {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return "", fmt.Errorf("scheme %q is not https", u.Scheme)
	}
	if u.User != nil {
		return "", errors.New("userinfo is not allowed")
	}
	if u.Opaque != "" || u.Host == "" {
		return "", errors.New("not an absolute URI with a host")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", errors.New("empty host")
	}
	port := u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		return scheme + "://" + net.JoinHostPort(strings.Trim(host, "[]"), port), nil
	}
	return scheme + "://" + host, nil
}
