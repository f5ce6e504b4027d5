package audit

import "testing"

// BenchmarkParseCombined reads a Combined line as the audit does by
// default: the fields, and the check that the first is an address.
func BenchmarkParseCombined(b *testing.B) {
	a := &Auditor{}
	line := []byte(nginxCombined)
	var e Entry
	b.ReportAllocs()
	for range b.N {
		if ok, err := a.parseText(line, &e); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
