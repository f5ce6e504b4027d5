package audit

import (
	"bytes"
	"encoding/hex"
	"time"
)

// CLFParser reads lines of the Common and Combined Log Formats, as nginx and
// Apache write them:
//
//	203.0.113.9 - - [11/May/2026:11:46:40 +0000] "GET /private/x HTTP/1.1" 200 512
//	203.0.113.9 - frank [11/May/2026:11:46:40 +0000] "GET / HTTP/1.1" 200 512 "https://example.com/" "Mozilla/5.0 ..."
//
// The first is Common (Apache's "common"): it records no User-Agent. The
// second is Combined (nginx's default "combined", Apache's "combined"),
// which adds the Referer and the User-Agent; fields after those (Apache's
// "combinedio", nginx formats that append $request_time and the like) are
// ignored. Neither format records the Host. The quoted fields may hold the
// escapes both servers write: \" and \\, \xHH (nginx writes '"' as \x22),
// and \n, \r, \t, \b, \v (Apache). nginx writes "-" for a missing
// User-Agent; it is read as none sent.
//
// A CLFParser is not safe for concurrent use; the zero value is ready.
type CLFParser struct {
	bufs [2][]byte // unescape buffers: request line, User-Agent
	// The last time field read and its value: a busy log repeats the same
	// second on many lines.
	lastRaw  []byte
	lastTime time.Time
}

// Parse fills e from line and reports whether it is a line of the Common
// or Combined Log Format. A line whose request field is not a request
// ("-", or the bytes of a TLS handshake sent to a plain-HTTP port) is read,
// but e.HasURI is false.
func (p *CLFParser) Parse(line []byte, e *Entry) bool {
	*e = Entry{}
	// host ident authuser
	host, i := field(line, 0)
	if len(host) == 0 {
		return false
	}
	if _, i = field(line, i); i >= len(line) {
		return false
	}
	// The user name may hold spaces in some servers' logs: the time field
	// is the first '[' after the host.
	open := bytes.IndexByte(line[i:], '[')
	if open < 0 {
		return false
	}
	i += open
	end := bytes.IndexByte(line[i:], ']')
	if end < 0 {
		return false
	}
	raw := line[i+1 : i+end]
	t, ok := p.time(raw)
	if !ok {
		return false
	}
	i = skipSpaces(line, i+end+1)
	req, i, ok := quoted(line, i, &p.bufs[0])
	if !ok {
		return false
	}
	i = skipSpaces(line, i)
	status, i := field(line, i)
	if !isNumberOrDash(status) {
		return false
	}
	size, i := field(line, i)
	if !isNumberOrDash(size) {
		return false
	}
	e.Time, e.Status, e.RemoteIP = sane(t), atoi(status), host
	e.Format = FormatCommon
	i = skipSpaces(line, i)
	if i < len(line) {
		// Combined: "referer" "user-agent", and perhaps more fields.
		if _, i, ok = quoted(line, i, nil); !ok {
			return false
		}
		i = skipSpaces(line, i)
		ua, _, ok := quoted(line, i, &p.bufs[1])
		if !ok {
			return false
		}
		if len(ua) == 1 && ua[0] == '-' {
			ua = nil
		}
		e.UserAgent, e.HasUA, e.Format = ua, true, FormatCombined
	}
	e.Method, e.URI, e.HasURI = requestLine(req)
	return true
}

// requestLine splits a request line "GET /path HTTP/1.1" (or HTTP/0.9's
// "GET /path") into its method and target; ok is false when it is not a
// request.
func requestLine(req []byte) (method, uri []byte, ok bool) {
	sp := bytes.IndexByte(req, ' ')
	if sp <= 0 {
		return nil, nil, false
	}
	method, rest := req[:sp], req[sp+1:]
	for _, c := range method {
		if c < 'A' || c > 'Z' {
			return nil, nil, false
		}
	}
	if sp := bytes.LastIndexByte(rest, ' '); sp >= 0 && bytes.HasPrefix(rest[sp+1:], []byte("HTTP/")) {
		rest = rest[:sp]
	}
	if len(rest) == 0 || bytes.IndexByte(rest, ' ') >= 0 {
		return nil, nil, false
	}
	return method, rest, true
}

// field returns the space-delimited field at line[i] and the index after it.
func field(line []byte, i int) ([]byte, int) {
	i = skipSpaces(line, i)
	j := i
	for j < len(line) && line[j] != ' ' {
		j++
	}
	return line[i:j], j
}

func skipSpaces(line []byte, i int) int {
	for i < len(line) && line[i] == ' ' {
		i++
	}
	return i
}

func isNumberOrDash(b []byte) bool {
	if len(b) == 1 && b[0] == '-' {
		return true
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// quoted reads the quoted field at line[i] == '"' and returns its value
// (unescaped into *buf when it holds a backslash; buf nil: the value is
// only skipped) and the index after the closing quote.
func quoted(line []byte, i int, buf *[]byte) ([]byte, int, bool) {
	if i >= len(line) || line[i] != '"' {
		return nil, 0, false
	}
	start := i + 1
	j := start
	esc := false
	for ; j < len(line); j++ {
		if line[j] == '\\' {
			esc = true
			j++
			continue
		}
		if line[j] == '"' {
			break
		}
	}
	if j >= len(line) {
		return nil, 0, false
	}
	v := line[start:j]
	if !esc || buf == nil {
		return v, j + 1, true
	}
	return unescape(v, buf), j + 1, true
}

// unescape returns v with the escapes nginx and Apache write in a quoted
// field undone (see CLFParser), into *buf; v itself when it holds no
// backslash.
func unescape(v []byte, buf *[]byte) []byte {
	if bytes.IndexByte(v, '\\') < 0 {
		return v
	}
	out := (*buf)[:0]
	for k := 0; k < len(v); k++ {
		c := v[k]
		if c != '\\' || k+1 >= len(v) {
			out = append(out, c)
			continue
		}
		k++
		switch v[k] {
		case 'x':
			var b [1]byte
			if k+2 < len(v) {
				if _, err := hex.Decode(b[:], v[k+1:k+3]); err == nil {
					out = append(out, b[0])
					k += 2
					continue
				}
			}
			out = append(out, '\\', 'x')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'b':
			out = append(out, '\b')
		case 'v':
			out = append(out, '\v')
		default: // \" and \\, and anything else as itself
			out = append(out, v[k])
		}
	}
	*buf = out
	return out
}

// time reads a CLF time, "11/May/2026:11:46:40 +0000", reusing the last
// value when the field repeats.
func (p *CLFParser) time(raw []byte) (time.Time, bool) {
	if len(raw) > 0 && bytes.Equal(raw, p.lastRaw) {
		return p.lastTime, true
	}
	t, ok := parseCLFTime(raw)
	if !ok {
		return time.Time{}, false
	}
	p.lastRaw = append(p.lastRaw[:0], raw...)
	p.lastTime = t
	return t, true
}

var months = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// parseCLFTime parses "02/Jan/2006:15:04:05 -0700" without time.Parse's
// generality (and cost); anything else is refused.
func parseCLFTime(b []byte) (time.Time, bool) {
	if len(b) != len("02/Jan/2006:15:04:05 -0700") || b[2] != '/' || b[6] != '/' || b[11] != ':' ||
		b[14] != ':' || b[17] != ':' || b[20] != ' ' || (b[21] != '+' && b[21] != '-') {
		return time.Time{}, false
	}
	num := func(s []byte) (int, bool) {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	day, ok1 := num(b[0:2])
	year, ok2 := num(b[7:11])
	hour, ok3 := num(b[12:14])
	minute, ok4 := num(b[15:17])
	sec, ok5 := num(b[18:20])
	zh, ok6 := num(b[22:24])
	zm, ok7 := num(b[24:26])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 60 || zm > 59 {
		return time.Time{}, false
	}
	month := 0
	for k, m := range months {
		if string(b[3:6]) == m {
			month = k + 1
		}
	}
	if month == 0 {
		return time.Time{}, false
	}
	off := (zh*60 + zm) * 60
	if b[21] == '-' {
		off = -off
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC).Add(-time.Duration(off) * time.Second)
	return t, true
}
