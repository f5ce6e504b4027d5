package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/caddyrobots/caddy-robots/enforce"
)

// TestLineStringsDoNotOutliveTheirBuffer: the auditor reads a line's
// target, address and rewrite headers through strings that share the
// line's buffer (unsafeString in audit.go), and Feed reads the next line
// into that same buffer. Nothing the auditor keeps may hold such a string:
// an audit whose lines all land on the same bytes of Feed's buffer must
// write the same decisions, and report the same samples, hosts and
// crawlers, as an audit of the same lines each in a buffer of its own that
// nothing overwrites.
func TestLineStringsDoNotOutliveTheirBuffer(t *testing.T) {
	lines := distinctLines(600)
	cfg := func() Config {
		hosts := make([]string, 30) // h30 to h39 are left out, and named in the report
		for i := range hosts {
			hosts[i] = fmt.Sprintf("h%02d.example", i)
		}
		return Config{
			Robots:      enforce.Parse([]byte("User-agent: *\nDisallow: /private/\n")),
			RobotsNew:   enforce.Parse([]byte("User-agent: *\nDisallow: /private/\nDisallow: /public/\n")),
			Hosts:       hosts,
			MaxCrawlers: 1000,
		}
	}
	const name = "access.log"

	// Through Feed: a reader that gives one line per Read puts every
	// line at the start of Feed's buffer, over the line before it.
	var fedOut bytes.Buffer
	c := cfg()
	c.Decisions = &fedOut
	fed, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := fed.Feed(name, &lineReader{lines: lines}, nil); err != nil {
		t.Fatal(err)
	}

	// Line by line, each line in a buffer of its own, all kept.
	var ownOut bytes.Buffer
	c = cfg()
	c.Decisions = &ownOut
	own, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	own.log = name // as Feed names the log its decisions come from
	for _, l := range lines {
		if err := own.Line(bytes.Clone(bytes.TrimSuffix(l, []byte("\n")))); err != nil {
			t.Fatal(err)
		}
	}

	ds := decisionsOf(t, &fedOut)
	if len(ds) != len(lines)*3/4 { // the lines of h30 to h39 are left out
		t.Fatalf("%d decisions for %d lines", len(ds), len(lines))
	}
	for _, d := range ds {
		want := lineFields(int(d.LogLine) - 1)
		if d.URI != want.uri || d.ClientIP != want.ip || d.Host != want.host || d.UserAgent != want.ua {
			t.Fatalf("the decision on line %d reads %q %q %q %q, the line %+v", d.LogLine, d.URI, d.ClientIP, d.Host, d.UserAgent, want)
		}
	}
	if got, want := fedOut.String(), ownOut.String(); got != want {
		t.Errorf("decisions through Feed differ from those of lines in buffers of their own:\n%s", firstDiff(got, want))
	}

	got, want := reportJSON(t, fed), reportJSON(t, own)
	if !strings.Contains(want, `"/public/`) || !strings.Contains(want, "h30.example") {
		t.Fatalf("the report holds no sample or no left-out host, so it proves nothing:\n%s", want)
	}
	if got != want {
		t.Errorf("the report through Feed differs from that of lines in buffers of their own:\n%s", firstDiff(got, want))
	}
}

// fields are what distinguishes line i of distinctLines.
type fields struct{ uri, ip, host, ua string }

// lineFields returns the target, address, Host and User-Agent of line i:
// each of the same length as every other line's, so that a string left
// pointing into a reused buffer reads as a later line's.
func lineFields(i int) fields {
	uri := fmt.Sprintf("/private/%04d", i) // refused by both robots.txt files
	if i%2 == 1 {
		uri = fmt.Sprintf("/public/x%04d", i) // refused by the new one only: a sample
	}
	return fields{
		uri:  uri,
		ip:   fmt.Sprintf("10.0.%d.%d", 100+i/200, 100+i%100),
		host: fmt.Sprintf("h%02d.example", i%40),
		ua:   fmt.Sprintf("Bot%02d/1.0 (+https://b%02d.example/)", i%60, i%60),
	}
}

// distinctLines returns n access-log lines (with their newlines), one
// second apart, of crawlers refused and allowed on 40 sites.
func distinctLines(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		f := lineFields(i)
		r := req{ts: t0 + float64(i), host: f.host, uri: f.uri, ua: f.ua, ip: f.ip}
		out[i] = append(r.line(), '\n')
	}
	return out
}

// lineReader gives one line per Read.
type lineReader struct {
	lines [][]byte
	next  int // the line the next Read gives
}

func (r *lineReader) Read(p []byte) (int, error) {
	if r.next == len(r.lines) {
		return 0, io.EOF
	}
	if len(p) < len(r.lines[r.next]) {
		return 0, io.ErrShortBuffer // never with Feed's buffer
	}
	r.next++
	return copy(p, r.lines[r.next-1]), nil
}

// decisionsOf reads the decisions written to out.
func decisionsOf(t *testing.T, out *bytes.Buffer) []Decision {
	t.Helper()
	var ds []Decision
	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	for dec.More() {
		var d Decision
		if err := dec.Decode(&d); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	return ds
}

// reportJSON returns a's report as JSON.
func reportJSON(t *testing.T, a *Auditor) string {
	t.Helper()
	var b bytes.Buffer
	if err := a.Report().WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// firstDiff returns the first line in which got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got %s\nwant %s", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}
