package audit

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// Format is the format of an access-log line.
type Format uint8

// The formats the audit reads.
const (
	// FormatNone: the line was not read (unreadable).
	FormatNone Format = iota
	// FormatCaddyJSON is Caddy's JSON access log.
	FormatCaddyJSON
	// FormatCombined is the Combined Log Format (nginx's "combined",
	// Apache's "combined"): the Common Log Format with the Referer and the
	// User-Agent.
	FormatCombined
	// FormatCommon is the Common Log Format (Apache's "common"): no
	// User-Agent, no host.
	FormatCommon
	// FormatVhostCombined is Apache's vhost_combined: the virtual host
	// and port, then the Combined Log Format.
	FormatVhostCombined
	// FormatNginx is a line read by the nginx log_format given with
	// --log-format.
	FormatNginx
	formats
)

var formatNames = [...]string{"unreadable", "caddy-json", "combined", "common", "vhost-combined", "nginx"}

// String is the format's name as the report shows it: caddy-json,
// combined, common, vhost-combined or nginx.
func (f Format) String() string { return formatNames[f] }

// Entry holds the fields of one access-log line that the audit uses.
// The byte slices point into the line or into the parser's buffers: they
// are valid until the next call of Scanner.Parse (or of the Common Log
// Format parser).
//
// The field names are those Caddy v2 writes (modules/caddyhttp/server.go,
// LoggableHTTPRequest in marshalers.go): "ts", "status", and inside
// "request": "remote_ip", "client_ip", "method", "host", "uri", "headers"
// (each header an array of strings, names canonical) and, for a request
// over TLS, "tls".
type Entry struct {
	Time      time.Time // from "ts"; zero when absent or unreadable
	Status    int       // "status"; 0 when absent
	Method    []byte    // request.method
	Host      []byte    // request.host
	URI       []byte    // request.uri: the request target as received
	UserAgent []byte    // request.headers.User-Agent[0]
	// UserAgents is the raw JSON array of the User-Agent values when the
	// request sent more than one (the handler judges it by the first
	// that is a bot's); nil otherwise.
	UserAgents []byte
	RemoteIP   []byte // request.remote_ip
	ClientIP   []byte // request.client_ip (set when trusted proxies are configured)
	// Rewrites are the values of the rewrite headers the request carried
	// (policy.RewriteHeaders: X-Original-Url, X-Rewrite-Url,
	// X-Forwarded-Prefix), nil where absent.
	Rewrites [3][]byte
	// ForwardedProto is the first X-Forwarded-Proto value, nil where
	// absent.
	ForwardedProto []byte
	// Signals are the browser's own headers the request carried, as
	// policy.HeaderSignals reads a header map: agents.FetchMetadata for any
	// of Sec-Fetch-Site, Sec-Fetch-Mode and Sec-Fetch-Dest,
	// agents.ClientHints for Sec-CH-UA (Caddy's JSON only).
	Signals agents.Signals
	// FetchSite, FetchMode, FetchDest, Upgrade and Accept are the first
	// values of Sec-Fetch-Site, -Mode, -Dest, Upgrade and Accept, nil
	// where absent; Purpose is set when the request said it is a prefetch
	// or prerender (Sec-Purpose, Purpose, X-Moz: prefetch). Together they
	// give the request's kind (Kind), as policy.KindOf reads a header map.
	FetchSite, FetchMode, FetchDest, Upgrade, Accept []byte
	Purpose                                          bool
	// Forwarded is set when the request carried X-Forwarded-For or
	// Forwarded (Caddy's JSON only): with client_ip equal to remote_ip,
	// the peer forwarded for others without being trusted.
	Forwarded  bool
	HasHeaders bool   // the line records the request's headers (request.headers: Caddy's JSON)
	TLS        bool   // the request came over TLS (request.tls)
	HasURI     bool   // the line has a request.uri: it is an access-log line
	HasUA      bool   // the format records the User-Agent (Common does not)
	HasHost    bool   // the format records the Host (CLF does not)
	Format     Format // the line's format

	// TLSFingerprint, TLSEngine and TLSVersions are the top-level fields
	// tls_fingerprint, tls_engine and tls_versions that log_append adds
	// from the placeholders {http.robots.tls_fingerprint},
	// {http.robots.tls_engine} and {http.robots.tls_versions} (Caddy's
	// JSON only); nil where absent or null. HasTLSVersions tells an empty
	// tls_versions (a hello without supported_versions) from none.
	TLSFingerprint, TLSEngine, TLSVersions []byte
	HasTLSVersions                         bool

	// Headers is request.headers as the line has it, a JSON object (nil
	// where absent), and Proto request.proto ("HTTP/1.1"): read only for
	// the client's shape (Auditor.loggedShape), which few lines need.
	Headers, Proto []byte
}

// Addr returns the client's address as logged: client_ip when present,
// else remote_ip (in the Common and Combined Log Formats, the first field).
func (e *Entry) Addr() []byte {
	if len(e.ClientIP) > 0 {
		return e.ClientIP
	}
	return e.RemoteIP
}

// Scanner extracts the fields of an Entry from a JSON log line without
// decoding the rest: values it does not need are skipped, strings are
// unescaped only when they contain a backslash. It checks the structure it
// walks but is not a full JSON validator. A Scanner is not safe for
// concurrent use; the zero value is ready.
type Scanner struct {
	bufs [scanFields][]byte // unescape buffers, one per string field
}

const (
	fMethod = iota
	fHost
	fURI
	fUA
	fRemote
	fClient
	fTS
	fRewrite        // three buffers: one per rewrite header
	fForwardedProto = fRewrite + 3
	fFetchSite      = fForwardedProto + 1
	fFetchMode      = fFetchSite + 1
	fFetchDest      = fFetchMode + 1
	fUpgrade        = fFetchDest + 1
	fAccept         = fUpgrade + 1
	fTLSFingerprint = fAccept + 1
	fTLSEngine      = fTLSFingerprint + 1
	fTLSVersions    = fTLSEngine + 1
	fProto          = fTLSVersions + 1
	scanFields      = fProto + 1
)

// Kind returns the request's kind as the handler reads it from the
// headers (policy.KindOf); 0 for a line that records no headers.
func (e *Entry) Kind() policy.Kind {
	return policy.KindFrom(unsafeString(e.FetchSite), unsafeString(e.FetchMode), unsafeString(e.FetchDest),
		e.Purpose, unsafeString(e.Upgrade))
}

// rewriteHeaders are policy.RewriteHeaders, as Caddy logs them (header
// names canonical; compared without regard to case).
var rewriteHeaders = [3][]byte{[]byte("X-Original-Url"), []byte("X-Rewrite-Url"), []byte("X-Forwarded-Prefix")}

var (
	userAgentHeader      = []byte("User-Agent")
	forwardedProtoHeader = []byte("X-Forwarded-Proto")
	forwardedForHeader   = []byte("X-Forwarded-For")
	forwardedHeader      = []byte("Forwarded")
	secFetchHeader       = []byte("Sec-Fetch-")
	secCHUAHeader        = []byte("Sec-Ch-Ua")
)

// secSignal returns the browser signal a header name stands for
// (policy.HeaderSignals): FetchMetadata for Sec-Fetch-Site, -Mode and
// -Dest, ClientHints for Sec-CH-UA, compared without regard to case.
func secSignal(key []byte) agents.Signals {
	// Caddy logs the names canonical: most are decided by one compare.
	switch string(key) {
	case "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest":
		return agents.FetchMetadata
	case "Sec-Ch-Ua":
		return agents.ClientHints
	case "Sec-Fetch-User", "Sec-Ch-Ua-Mobile", "Sec-Ch-Ua-Platform":
		return 0
	}
	switch len(key) {
	case len("Sec-Fetch-Site"):
		if !bytes.EqualFold(key[:len(secFetchHeader)], secFetchHeader) {
			return 0
		}
		switch rest := key[len(secFetchHeader):]; {
		case bytes.EqualFold(rest, []byte("Site")), bytes.EqualFold(rest, []byte("Mode")), bytes.EqualFold(rest, []byte("Dest")):
			return agents.FetchMetadata
		}
	case len("Sec-Ch-Ua"):
		if bytes.EqualFold(key, secCHUAHeader) {
			return agents.ClientHints
		}
	}
	return 0
}

// Parse fills e from line, a JSON object, and reports whether the line was
// well formed as far as it was read.
func (s *Scanner) Parse(line []byte, e *Entry) bool {
	*e = Entry{}
	i := skipWS(line, 0)
	if i >= len(line) || line[i] != '{' {
		return false
	}
	i, ok := s.object(line, i, e, 0)
	if !ok {
		return false
	}
	i = skipWS(line, i)
	if i != len(line) {
		return false
	}
	e.Format, e.HasUA, e.HasHost = FormatCaddyJSON, true, true
	return true
}

// object walks the object starting at line[i] == '{' at nesting level lvl
// (0: top, 1: request, 2: headers) and returns the index after it.
func (s *Scanner) object(line []byte, i int, e *Entry, lvl int) (int, bool) {
	i = skipWS(line, i+1)
	if i < len(line) && line[i] == '}' {
		return i + 1, true
	}
	var kbuf [32]byte
	for {
		if i >= len(line) || line[i] != '"' {
			return 0, false
		}
		key, next, _, ok := readString(line, i, kbuf[:0])
		if !ok {
			return 0, false
		}
		i = skipWS(line, next)
		if i >= len(line) || line[i] != ':' {
			return 0, false
		}
		i = skipWS(line, i+1)
		if i >= len(line) {
			return 0, false
		}
		field, done := -1, false
		switch lvl {
		case 0:
			i, field, done, ok = s.topValue(line, i, key, e)
		case 1:
			i, field, done, ok = s.requestValue(line, i, key, e)
		case 2:
			i, done, ok = s.headerValue(line, i, key, e)
		}
		if ok && !done {
			i, ok = s.plainValue(line, i, field, e)
		}
		if !ok {
			return 0, false
		}
		i = skipWS(line, i)
		if i >= len(line) {
			return 0, false
		}
		switch line[i] {
		case ',':
			i = skipWS(line, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// topValue reads the top-level value at line[i] of key, if the scanner
// knows it: ts, status, the request object. done reports that it read the
// value and next is the index after it; otherwise field is the string
// field the value fills (-1: none) and next is i.
func (s *Scanner) topValue(line []byte, i int, key []byte, e *Entry) (next, field int, done, ok bool) {
	switch string(key) {
	case "ts":
		if line[i] == '"' {
			return i, fTS, false, true
		}
		end := scanLiteral(line, i)
		e.Time = sane(parseEpoch(line[i:end]))
		return end, -1, true, true
	case "status":
		end := scanLiteral(line, i)
		e.Status = atoi(line[i:end])
		return end, -1, true, true
	case "request":
		if line[i] == '{' {
			next, ok = s.object(line, i, e, 1)
			return next, -1, true, ok
		}
	case "tls_fingerprint":
		return i, fTLSFingerprint, false, true
	case "tls_engine":
		return i, fTLSEngine, false, true
	case "tls_versions":
		return i, fTLSVersions, false, true
	}
	return i, -1, false, true
}

// requestValue is topValue for the keys of the request object.
func (s *Scanner) requestValue(line []byte, i int, key []byte, e *Entry) (next, field int, done, ok bool) {
	switch string(key) {
	case "method":
		return i, fMethod, false, true
	case "host":
		return i, fHost, false, true
	case "uri":
		return i, fURI, false, true
	case "remote_ip":
		return i, fRemote, false, true
	case "client_ip":
		return i, fClient, false, true
	case "proto":
		return i, fProto, false, true
	case "headers":
		if line[i] == '{' {
			e.HasHeaders = true
			next, ok = s.object(line, i, e, 2)
			if ok {
				e.Headers = line[i:next]
			}
			return next, -1, true, ok
		}
	case "tls":
		// Caddy writes it for a request over TLS only.
		e.TLS = line[i] == '{'
	}
	return i, -1, false, true
}

// headerValue reads the first value of the header key, whose array starts
// at line[i], when e keeps it, and notes in e the headers whose presence
// matters. done reports that it read the array and next is the index
// after it.
func (s *Scanner) headerValue(line []byte, i int, key []byte, e *Entry) (next int, done, ok bool) {
	if line[i] != '[' || len(key) == 0 {
		return i, false, true
	}
	buf, dst := headerField(line, i, key, e)
	if dst == nil {
		return i, false, true
	}
	j := skipWS(line, i+1)
	if j >= len(line) || line[j] != '"' {
		return i, false, true
	}
	v, after, copied, ok := readString(line, j, s.bufs[buf][:0])
	if !ok {
		return 0, false, false
	}
	if copied {
		s.bufs[buf] = v[:0]
	}
	*dst = v
	// skip the rest of the array
	if next, ok = skipValueFrom(line, i, after); !ok {
		return 0, false, false
	}
	if buf == fUA {
		if k := skipWS(line, after); k < len(line) && line[k] == ',' {
			e.UserAgents = line[i:next]
		}
	}
	return next, true, true
}

// headerField returns the buffer and the field of e that the header key
// fills (nil: none), and notes in e the headers whose presence matters.
func headerField(line []byte, i int, key []byte, e *Entry) (buf int, dst *[]byte) {
	switch key[0] | 0x20 {
	case 'u':
		if len(key) == len(userAgentHeader) && bytes.EqualFold(key, userAgentHeader) {
			return fUA, &e.UserAgent
		} else if bytes.EqualFold(key, []byte("Upgrade")) {
			return fUpgrade, &e.Upgrade
		}
	case 'a':
		if bytes.EqualFold(key, []byte("Accept")) {
			return fAccept, &e.Accept
		}
	case 'p':
		e.Purpose = e.Purpose || bytes.EqualFold(key, []byte("Purpose"))
	case 's':
		e.Signals |= secSignal(key)
		switch {
		case bytes.EqualFold(key, []byte("Sec-Fetch-Site")):
			return fFetchSite, &e.FetchSite
		case bytes.EqualFold(key, []byte("Sec-Fetch-Mode")):
			return fFetchMode, &e.FetchMode
		case bytes.EqualFold(key, []byte("Sec-Fetch-Dest")):
			return fFetchDest, &e.FetchDest
		case bytes.EqualFold(key, []byte("Sec-Purpose")):
			e.Purpose = true
		}
	case 'f':
		if len(key) == len(forwardedHeader) && bytes.EqualFold(key, forwardedHeader) {
			e.Forwarded = true // presence only: skipped
		}
	case 'x':
		return xHeaderField(line, i, key, e)
	}
	return -1, nil
}

// xHeaderField is headerField for a header whose name starts with X.
func xHeaderField(line []byte, i int, key []byte, e *Entry) (buf int, dst *[]byte) {
	if len(key) == len(forwardedForHeader) && bytes.EqualFold(key, forwardedForHeader) {
		e.Forwarded = true // presence only: skipped
		return -1, nil
	}
	if bytes.EqualFold(key, []byte("X-Moz")) {
		j := skipWS(line, i+1)
		if j < len(line) && line[j] == '"' {
			v, _, _, ok := readString(line, j, nil)
			e.Purpose = e.Purpose || ok && bytes.EqualFold(v, []byte("prefetch"))
		}
		return -1, nil
	}
	if len(key) < len("X-Rewrite-Url") {
		return -1, nil
	}
	if len(key) == len(forwardedProtoHeader) && bytes.EqualFold(key, forwardedProtoHeader) {
		return fForwardedProto, &e.ForwardedProto
	}
	buf = -1
	for k, name := range rewriteHeaders {
		if bytes.EqualFold(key, name) {
			buf, dst = fRewrite+k, &e.Rewrites[k]
		}
	}
	return buf, dst
}

// plainValue reads the value at line[i]: into field of e when it is a
// string and field >= 0, else skipping it. It returns the index after it.
func (s *Scanner) plainValue(line []byte, i, field int, e *Entry) (int, bool) {
	if field < 0 || line[i] != '"' {
		return skipValue(line, i)
	}
	v, after, copied, ok := readString(line, i, s.bufs[field][:0])
	if !ok {
		return 0, false
	}
	if copied {
		s.bufs[field] = v[:0]
	}
	switch field {
	case fMethod:
		e.Method = v
	case fHost:
		e.Host = v
	case fURI:
		e.URI, e.HasURI = v, true
	case fRemote:
		e.RemoteIP = v
	case fClient:
		e.ClientIP = v
	case fTS:
		e.Time = sane(parseTimeString(v))
	case fTLSFingerprint:
		e.TLSFingerprint = v
	case fTLSEngine:
		e.TLSEngine = v
	case fTLSVersions:
		e.TLSVersions, e.HasTLSVersions = v, true
	case fProto:
		e.Proto = v
	}
	return after, true
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanLiteral returns the end of a number, true, false or null.
func scanLiteral(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// readString reads the JSON string starting at b[i] == '"'. Without
// escapes it returns a sub-slice of b; otherwise encoding/json decodes it
// into buf and readString reports copied. next is the index after the
// closing quote.
func readString(b []byte, i int, buf []byte) (v []byte, next int, copied, ok bool) {
	start := i + 1
	k := bytes.IndexByte(b[start:], '"')
	if k < 0 {
		return nil, 0, false, false
	}
	q := start + k
	if bytes.IndexByte(b[start:q], '\\') < 0 {
		return b[start:q], q + 1, false, true
	}
	next, ok = skipString(b, i)
	if !ok {
		return nil, 0, false, false
	}
	var str string // escapes are rare in access logs: this allocation too
	if json.Unmarshal(b[i:next], &str) != nil {
		return nil, 0, false, false
	}
	return append(buf, str...), next, true, true
}

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) (int, bool) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, false
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		j = q + 1
	}
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) (int, bool) {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		return skipValueFrom(b, i, i+1)
	}
	end := scanLiteral(b, i)
	if end == i {
		return 0, false
	}
	return end, true
}

// skipValueFrom skips the rest of the object or array that opened at
// b[open], resuming at b[j].
func skipValueFrom(b []byte, open, j int) (int, bool) {
	depth := 1
	for j < len(b) {
		switch b[j] {
		case '"':
			var ok bool
			if j, ok = skipString(b, j); !ok {
				return 0, false
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, true
			}
		}
		j++
	}
	_ = open
	return 0, false
}

func atoi(b []byte) int {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// parseEpoch reads a numeric "ts": seconds since the epoch with a
// fraction (Caddy's default), or milliseconds, microseconds or
// nanoseconds (the unix_*_float time formats), told apart by magnitude.
func parseEpoch(b []byte) time.Time {
	var ip, frac int64
	var fd int
	i := 0
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		if ip > (1<<62)/10 {
			return time.Time{}
		}
		ip = ip*10 + int64(b[i]-'0')
		i++
	}
	if i == 0 {
		return time.Time{}
	}
	if i < len(b) && b[i] == '.' {
		i++
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			if fd < 9 {
				frac = frac*10 + int64(b[i]-'0')
				fd++
			}
			i++
		}
	}
	if i != len(b) {
		// An exponent or garbage: take the slow path.
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil || f <= 0 {
			return time.Time{}
		}
		return epochFloat(f)
	}
	for ; fd < 9; fd++ {
		frac *= 10
	}
	switch {
	case ip >= 1e17: // nanoseconds
		return time.Unix(0, ip).UTC()
	case ip >= 1e14: // microseconds
		return time.Unix(0, ip*1e3+frac/1e6).UTC()
	case ip >= 1e11: // milliseconds
		return time.Unix(0, ip*1e6+frac/1e3).UTC()
	}
	return time.Unix(ip, frac).UTC()
}

func epochFloat(f float64) time.Time {
	switch {
	case f >= 1e17:
		return time.Unix(0, int64(f)).UTC()
	case f >= 1e14:
		return time.Unix(0, int64(f*1e3)).UTC()
	case f >= 1e11:
		return time.Unix(0, int64(f*1e6)).UTC()
	}
	s := int64(f)
	return time.Unix(s, int64((f-float64(s))*1e9)).UTC()
}

// minTime is the earliest time the audit believes: a "ts" before it is
// taken as absent rather than stretching the report's time axis.
var minTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func sane(t time.Time) time.Time {
	if t.Before(minTime) {
		return time.Time{}
	}
	return t
}

// timeLayouts are the string time formats Caddy's encoders can write.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.000Z0700", // iso8601
	"2006/01/02 15:04:05.000",      // wall_milli
	"2006/01/02 15:04:05",          // wall
	time.RFC1123Z,
	time.RFC1123,
	"02/Jan/2006:15:04:05 -0700", // common_log
}

func parseTimeString(b []byte) time.Time {
	s := string(b)
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC()
		}
	}
	if t := parseEpoch(b); !t.IsZero() {
		return t
	}
	return time.Time{}
}
