package warnlimit

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestLimiter(t *testing.T) {
	var l Limiter
	t0 := time.Unix(1_000_000, 0)
	if ok, n := l.Allow(t0); !ok || n != 0 {
		t.Fatalf("first warning: %v %d", ok, n)
	}
	for i := 1; i <= 3; i++ {
		if ok, _ := l.Allow(t0.Add(time.Duration(i) * time.Second)); ok {
			t.Fatalf("warning %d within 30 s let through", i)
		}
	}
	if ok, n := l.Allow(t0.Add(Every)); !ok || n != 3 {
		t.Fatalf("after 30 s: %v, %d held back, want true, 3", ok, n)
	}
}

func TestShorten(t *testing.T) {
	for _, s := range []string{"short", strings.Repeat("a", 300), strings.Repeat("é", 200), strings.Repeat("😀", 100)} {
		got := Shorten(s, 256)
		if len(got) > 256 || !utf8.ValidString(got) || (len(s) <= 256 && got != s) {
			t.Errorf("Shorten(%d bytes) = %d bytes, valid %v", len(s), len(got), utf8.ValidString(got))
		}
	}
}
