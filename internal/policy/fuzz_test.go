package policy

import (
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"
)

// escaper writes a decoded path as the matcher must read it: '%' as an
// escape of its own (no second decoding), '?' and '#' as part of the path.
var escaper = strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23")

// cleanOracle cleans a decoded path as file_server and most routers do:
// path.Clean, keeping a trailing slash (and the one a trailing "." or ".."
// segment stands for).
func cleanOracle(p string) string {
	if p == "" {
		return "/"
	}
	c := path.Clean("/" + p)
	if c != "/" && (strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")) {
		c += "/"
	}
	return c
}

// isPlain reports whether a target is plain: origin-form, and its path
// has no '%', '\\', ';', '#', "//" or "/.".
func isPlain(target string) bool {
	p, _, _ := strings.Cut(target, "?")
	return strings.HasPrefix(p, "/") && !strings.ContainsAny(p, "%\\;#") && !strings.Contains(p, "//") && !strings.Contains(p, "/.")
}

// FuzzParseTarget checks the properties every request target's forms keep,
// whatever a client sends: the seeds (testdata/fuzz/FuzzParseTarget) are the
// attacks of the forms table.
func FuzzParseTarget(f *testing.F) {
	f.Fuzz(func(t *testing.T, method, target, xOriginal, xRewrite, xPrefix string) {
		tg := ParseTarget(method, target, xOriginal, xRewrite, xPrefix)
		forms := tg.Forms()

		if len(forms) == 0 || len(forms) > MaxForms {
			t.Fatalf("%d forms", len(forms))
		}
		if tg.overflow && len(forms) != MaxForms {
			t.Fatalf("overflow with %d forms", len(forms))
		}
		// The first form is the target as sent.
		if forms[0] != tg.Raw || tg.Source(0) != FromSent {
			t.Fatalf("forms[0] %q (%s), Raw %q", forms[0], tg.Source(0), tg.Raw)
		}
		switch {
		case target == "":
			if tg.Raw != "/" {
				t.Fatalf("empty target: Raw %q", tg.Raw)
			}
		case target[0] == '/':
			if tg.Raw != target || tg.Bad {
				t.Fatalf("origin-form %q: Raw %q, bad %v", target, tg.Raw, tg.Bad)
			}
		}
		for i, fm := range forms {
			if !strings.HasPrefix(fm, "/") {
				t.Fatalf("form %d %q does not start with /", i, fm)
			}
			if tg.Source(i) > FromHeader {
				t.Fatalf("form %d: source %d", i, tg.Source(i))
			}
			if slices.Contains(forms[:i], fm) {
				t.Fatalf("form %d %q twice", i, fm)
			}
		}
		if tg.IsRobotsTxt() && (tg.Bad || tg.Path != "/robots.txt") {
			t.Fatalf("IsRobotsTxt with bad %v, path %q", tg.Bad, tg.Path)
		}
		has := func(fm string) bool { return tg.overflow || slices.Contains(forms, fm) }

		// The decoded, cleaned path is judged, escaped so that it is
		// neither decoded twice nor cut at a '?' or '#'.
		rawPath, _, _ := strings.Cut(tg.Raw, "?")
		q := tg.Raw[len(rawPath):]
		if dec, err := url.PathUnescape(rawPath); err == nil {
			if want := escaper.Replace(cleanOracle(dec)) + q; !has(want) {
				t.Fatalf("decoded, cleaned form %q missing from %q", want, forms)
			}
		}
		// So is the path Go's server gives handlers (but for OPTIONS *,
		// which asks for no resource and is judged as "/").
		if !tg.Bad && target != "*" {
			if u, err := url.ParseRequestURI(target); err == nil && u.Path != "" {
				if tg.Path != u.Path {
					t.Fatalf("Path %q, Go's %q", tg.Path, u.Path)
				}
				if want := escaper.Replace(cleanOracle(u.Path)) + q; !has(want) {
					t.Fatalf("Go's path as a form %q missing from %q", want, forms)
				}
			}
		}
		// Rewrite headers are judged: X-Original-URL and X-Rewrite-URL as
		// targets, X-Forwarded-Prefix before the target's path.
		for _, v := range []string{xOriginal, xRewrite} {
			if v == "" {
				continue
			}
			sub := ParseTarget("GET", strings.TrimSpace(v))
			if !has(sub.Forms()[0]) {
				t.Fatalf("rewrite header %q (%q) missing from %q", v, sub.Forms()[0], forms)
			}
		}
		if xPrefix != "" {
			p := strings.TrimRight("/"+strings.TrimLeft(strings.TrimSpace(xPrefix), "/"), "/")
			sub := ParseTarget("GET", strings.TrimSpace(p+tg.Raw))
			if !has(sub.Forms()[0]) {
				t.Fatalf("X-Forwarded-Prefix %q (%q) missing from %q", xPrefix, sub.Forms()[0], forms)
			}
		}

		// A plain target is its only form.
		if isPlain(target) && xOriginal == "" && xRewrite == "" && xPrefix == "" {
			if len(forms) != 1 {
				t.Fatalf("plain %q: forms %q", target, forms)
			}
		}
	})
}
