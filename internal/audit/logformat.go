package audit

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// LogFormat says how the audit reads the lines that are not Caddy's JSON
// (a JSON line is always read as Caddy's). The zero value, and
// ParseLogFormat("combined"), read the Combined and Common Log Formats,
// whose first field must be the client's address.
type LogFormat struct {
	name   string
	vhost  bool         // Apache's vhost_combined: "%v:%p " before the Combined fields
	tokens []nginxToken // an nginx log_format string; nil otherwise
	fields string       // the nginx variables read, for messages
}

// LogFormatNames are the names --log-format takes besides an nginx
// log_format string.
var LogFormatNames = []string{"combined", "vhost_combined"}

// NginxVariables are the nginx variables a log_format string may use that
// the audit reads; any other variable is a field it skips.
var NginxVariables = []string{
	"$remote_addr", "$time_local", "$time_iso8601", "$msec", "$request", "$request_method", "$request_uri",
	"$status", "$http_user_agent", "$host", "$http_host", "$server_name",
}

// ParseLogFormat reads the value of --log-format: "combined" (or ""):
// the Combined and Common Log Formats, nginx's and Apache's;
// "vhost_combined": Apache's (Debian's other_vhosts_access.log), whose
// lines start with the virtual host and port; or an nginx log_format
// string, as the nginx configuration gives it (the quotes around it and
// the directive's name and format name may be left in).
func ParseLogFormat(s string) (LogFormat, error) {
	switch strings.TrimSpace(s) {
	case "", "combined":
		return LogFormat{name: "combined"}, nil
	case "vhost_combined":
		return LogFormat{name: "vhost_combined", vhost: true}, nil
	}
	if !strings.Contains(s, "$") {
		return LogFormat{}, fmt.Errorf("--log-format %q: want %s, or an nginx log_format string such as '$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\"'",
			s, strings.Join(LogFormatNames, ", "))
	}
	return parseNginxFormat(s)
}

// String is the format's name, or "nginx log_format" with the variables
// read.
func (f LogFormat) String() string {
	if f.tokens != nil {
		return "nginx log_format (reading " + f.fields + ")"
	}
	if f.name == "" {
		return "combined"
	}
	return f.name
}

// label is the format as the report names it: "" for the default.
func (f LogFormat) label() string {
	if f.name == "" || f.name == "combined" {
		return ""
	}
	return f.String()
}

// parseText fills e from a line that is not JSON.
func (a *Auditor) parseText(line []byte, e *Entry) (bool, error) {
	f := &a.cfg.LogFormat
	switch {
	case f.tokens != nil:
		return a.nginx.parse(f.tokens, line, e), nil
	case f.vhost:
		return a.parseVhost(line, e), nil
	}
	if !a.clf.Parse(line, e) {
		return false, nil
	}
	return true, clientField(e)
}

// parseVhost reads a line of Apache's vhost_combined: "example.com:443 "
// followed by a Combined (or Common) line.
func (a *Auditor) parseVhost(line []byte, e *Entry) bool {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return false
	}
	vhost := line[:sp]
	if !a.clf.Parse(line[sp+1:], e) {
		return false
	}
	if _, err := netip.ParseAddr(string(e.RemoteIP)); err != nil {
		return false
	}
	// %v:%p: the port after the last colon (an IPv6 vhost is bracketed).
	if c := bytes.LastIndexByte(vhost, ':'); c > 0 && bytes.IndexByte(vhost[c:], ']') < 0 {
		vhost = vhost[:c]
	}
	e.Host, e.HasHost = vhost, true
	e.Format = FormatVhostCombined
	return true
}

// clientField checks that the first field of a Combined or Common line is
// an address: Apache's vhost_combined (and formats with a host name
// first) would otherwise be audited with the virtual host as the client.
func clientField(e *Entry) error {
	if isAddr(e.RemoteIP) {
		return nil
	}
	hint := "give --log-format with the format your server writes (vhost_combined, or your nginx log_format string)"
	if bytes.IndexByte(e.RemoteIP, ':') > 0 || bytes.IndexByte(e.RemoteIP, '.') > 0 {
		hint = "if this is Apache's vhost_combined (Debian's other_vhosts_access.log: \"%v:%p %h ...\"), give --log-format vhost_combined; " +
			"for nginx, give --log-format with your log_format string"
	}
	return fmt.Errorf("%w: %q (a %s line starts with it): %s", ErrNotAddress, e.RemoteIP, formatLabel(e.Format), hint)
}

// isAddr reports whether b is an IP address. A dotted IPv4 address, the
// usual case, is checked here without converting b to a string, which
// would cost every line an allocation; anything else netip decides.
func isAddr(b []byte) bool {
	parts, n, digits := 0, 0, 0
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9' && !(digits > 0 && n == 0):
			n, digits = n*10+int(c-'0'), digits+1
			if n > 255 {
				return netipAddr(b)
			}
		case c == '.' && digits > 0:
			parts, n, digits = parts+1, 0, 0
		default:
			return netipAddr(b)
		}
	}
	return parts == 3 && digits > 0 || netipAddr(b)
}

func netipAddr(b []byte) bool {
	_, err := netip.ParseAddr(string(b))
	return err == nil
}

// ErrNotAddress is the error of a Combined or Common Log Format line whose
// first field is not the client's address.
var ErrNotAddress = errors.New("the first field is not the client's address")
