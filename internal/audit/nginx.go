package audit

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
)

// nginxToken is a piece of an nginx log_format string: a literal, or a
// variable (name set).
type nginxToken struct {
	literal []byte
	name    string
}

// nginxRead are the variables the audit reads (see NginxVariables); the
// others are fields it skips.
var nginxRead = func() map[string]bool {
	m := map[string]bool{}
	for _, v := range NginxVariables {
		m[v[1:]] = true
	}
	return m
}()

// parseNginxFormat compiles an nginx log_format string. The directive
// around it (log_format NAME '...' '...';) may be left in: its quoted
// pieces are joined, as nginx joins them.
func parseNginxFormat(s string) (LogFormat, error) {
	src := strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(src, "log_format"); ok {
		rest = strings.TrimSpace(rest)
		if i := strings.IndexAny(rest, " \t"); i > 0 && !strings.ContainsAny(rest[:i], "'$") {
			rest = rest[i:] // the format's name
		}
		src = strings.TrimSuffix(strings.TrimSpace(rest), ";")
	}
	src = strings.TrimSpace(src)
	if strings.HasPrefix(src, "'") {
		var b strings.Builder
		for rest := src; strings.HasPrefix(rest, "'"); {
			end := strings.IndexByte(rest[1:], '\'')
			if end < 0 {
				return LogFormat{}, fmt.Errorf("--log-format: a quote is not closed in %q", s)
			}
			b.WriteString(rest[1 : 1+end])
			rest = strings.TrimSpace(rest[2+end:])
		}
		src = b.String()
	}
	var toks []nginxToken
	var lit []byte
	var read []string
	seen := map[string]bool{}
	for i := 0; i < len(src); {
		if src[i] != '$' {
			lit = append(lit, src[i])
			i++
			continue
		}
		name, next := nginxVariable(src, i)
		if name == "" {
			return LogFormat{}, fmt.Errorf("--log-format: \"$\" without a variable name at byte %d of %q", i, src)
		}
		if len(toks) > 0 && toks[len(toks)-1].name != "" && len(lit) == 0 {
			return LogFormat{}, fmt.Errorf("--log-format: $%s follows another variable with nothing between them: the audit cannot tell where one ends", name)
		}
		if len(lit) > 0 {
			toks = append(toks, nginxToken{literal: lit})
			lit = nil
		}
		toks = append(toks, nginxToken{name: name})
		if nginxRead[name] && !seen[name] {
			seen[name] = true
			read = append(read, "$"+name)
		}
		i = next
	}
	if len(lit) > 0 {
		toks = append(toks, nginxToken{literal: lit})
	}
	if !seen["remote_addr"] {
		return LogFormat{}, fmt.Errorf("--log-format: %q has no $remote_addr: the audit needs the client's address", src)
	}
	if !seen["request"] && !seen["request_uri"] {
		return LogFormat{}, fmt.Errorf("--log-format: %q has neither $request nor $request_uri: the audit needs the request's target", src)
	}
	return LogFormat{name: "nginx", tokens: toks, fields: strings.Join(read, " ")}, nil
}

// nginxVariable reads the variable name at src[i] == '$': $name or
// ${name}. It returns "" when there is none.
func nginxVariable(src string, i int) (name string, next int) {
	j := i + 1
	if j < len(src) && src[j] == '{' {
		end := strings.IndexByte(src[j:], '}')
		if end < 0 {
			return "", 0
		}
		return src[j+1 : j+end], j + end + 1
	}
	for j < len(src) && (src[j] == '_' || 'a' <= src[j] && src[j] <= 'z' || 'A' <= src[j] && src[j] <= 'Z' || '0' <= src[j] && src[j] <= '9') {
		j++
	}
	return src[i+1 : j], j
}

// nginxParser reads lines written by an nginx log_format. It is not safe
// for concurrent use; the zero value is ready.
type nginxParser struct {
	clf  CLFParser    // for $time_local, and its unescape buffers
	bufs [4][]byte    // unescape buffers: request, method, uri, user agent
	seen [2]bool      // method and uri read from their own variables
	tmp  nginxPending // the request line, applied last
}

type nginxPending struct {
	request []byte
	has     bool
}

// parse fills e from line as written by the format toks, and reports
// whether the line follows it and holds a client address.
func (p *nginxParser) parse(toks []nginxToken, line []byte, e *Entry) bool {
	*e = Entry{}
	p.seen, p.tmp = [2]bool{}, nginxPending{}
	i := 0
	for k, t := range toks {
		if t.name == "" {
			if !bytes.HasPrefix(line[i:], t.literal) {
				return false
			}
			i += len(t.literal)
			continue
		}
		end := len(line)
		if k+1 < len(toks) {
			next := toks[k+1].literal
			n := indexUnescaped(line[i:], next)
			if n < 0 {
				return false
			}
			end = i + n
		}
		if !p.value(t.name, line[i:end], e) {
			return false
		}
		i = end
	}
	if i != len(line) {
		return false
	}
	if p.tmp.has && !p.seen[1] {
		m, u, ok := requestLine(p.tmp.request)
		e.URI, e.HasURI = u, ok
		if !p.seen[0] {
			e.Method = m
		}
	}
	if _, err := netip.ParseAddr(string(e.RemoteIP)); err != nil {
		return false
	}
	e.Format = FormatNginx
	return true
}

// value reads the value v of the variable name into e.
func (p *nginxParser) value(name string, v []byte, e *Entry) bool {
	switch name {
	case "remote_addr":
		e.RemoteIP = v
	case "time_local":
		t, ok := p.clf.time(v)
		if !ok {
			return false
		}
		e.Time = sane(t)
	case "time_iso8601":
		e.Time = sane(parseTimeString(v))
	case "msec":
		e.Time = sane(parseEpoch(v))
	case "status":
		e.Status = atoi(v)
	case "request":
		p.tmp = nginxPending{request: unescape(v, &p.bufs[0]), has: true}
	case "request_method":
		e.Method, p.seen[0] = unescape(v, &p.bufs[1]), true
	case "request_uri":
		if u := unescape(v, &p.bufs[2]); len(u) > 0 && !(len(u) == 1 && u[0] == '-') {
			e.URI, e.HasURI = u, true
		}
		p.seen[1] = true
	case "http_user_agent":
		ua := unescape(v, &p.bufs[3])
		if len(ua) == 1 && ua[0] == '-' {
			ua = nil
		}
		e.UserAgent, e.HasUA = ua, true
	case "host", "http_host", "server_name":
		if len(v) > 0 && !(len(v) == 1 && v[0] == '-') && !e.HasHost {
			e.Host, e.HasHost = v, true
		}
	}
	return true
}

// indexUnescaped returns the index of sep in b, skipping bytes escaped
// with a backslash when sep starts with a quote (nginx escapes '"' in a
// value as \x22, Apache as \"); -1 when absent.
func indexUnescaped(b, sep []byte) int {
	if len(sep) == 0 || sep[0] != '"' {
		return bytes.Index(b, sep)
	}
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' {
			i++
			continue
		}
		if bytes.HasPrefix(b[i:], sep) {
			return i
		}
	}
	return -1
}
