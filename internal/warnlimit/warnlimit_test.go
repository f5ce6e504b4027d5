package warnlimit

import (
	"testing"
	"time"
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
