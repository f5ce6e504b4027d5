package enforce

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestNormalFormsDoNotOutliveTheirBuffers: Decide, Preferences and
// Readings match a target's normal form through a string that shares a
// buffer of the call (an array on its stack, or a pooled buffer for a long
// target) instead of a copy of it (unsafe.String in robots.go, prefs.go and
// readings.go). Nothing they return may keep that string: once a second
// call with another target of the same length has overwritten the buffer,
// every string the first call's answers hold, and every text rendered from
// them, must read as it did.
func TestNormalFormsDoNotOutliveTheirBuffers(t *testing.T) {
	r := Parse([]byte("User-agent: *\n" +
		"Disallow: /private/\n" +
		"Disallow: /*?q=\n" +
		"Dissallow: /tmp/\n" +
		"Allow: /private/ok\n" +
		"Content-Usage: train-ai=n\n" +
		"Content-Usage: /docs/ train-ai=y\n"))
	tokens := []string{"ExampleBot"}
	for _, size := range []int{40, 2000} { // the stack buffer, the pooled one
		if size > 512 && raceOn {
			continue // the race detector empties pools at random: the second call may not reuse the buffer
		}
		// Two targets that need normalising (%7E decodes to ~), so that
		// their normal forms are written into the buffer, and that differ
		// only past the rules' reach: a correct implementation gives both
		// the same answers.
		first := padTarget("/private/%7Ea", 'x', size)
		second := padTarget("/private/%7Ea", 'y', size)
		answers := func(target string) []string {
			d := r.Decide(tokens, target)
			p := r.Preferences(tokens, target)
			rd := r.Readings(tokens, true, target)
			out := stringsIn(reflect.ValueOf(d), 2)
			out = append(out, stringsIn(reflect.ValueOf(rd), 2)...)
			return append(out, d.String(), p.String(), p.Describe(), rd.Why)
		}
		got := answers(first)
		want := make([]string, len(got))
		for i, s := range got {
			want[i] = strings.Clone(s)
		}
		if other := answers(second); !slices.Equal(other, want) {
			t.Fatalf("size %d: the two targets get different answers:\n%q\n%q", size, other, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("size %d: answer %d changed after another call: %q, was %q", size, i, got[i], want[i])
			}
		}
	}
}

// padTarget returns prefix padded with c to size octets.
func padTarget(prefix string, c byte, size int) string {
	return prefix + strings.Repeat(string(c), size-len(prefix))
}

// stringsIn returns the strings held by v's fields, and by the fields of
// what its pointers point to, depth levels down.
func stringsIn(v reflect.Value, depth int) []string {
	var out []string
	switch v.Kind() {
	case reflect.String:
		out = append(out, v.String())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() && depth > 0 {
			out = append(out, stringsIn(v.Elem(), depth-1)...)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			out = append(out, stringsIn(v.Field(i), depth)...)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			out = append(out, stringsIn(v.Index(i), depth)...)
		}
	}
	return out
}
