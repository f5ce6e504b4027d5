package state

import (
	"testing"
	"time"
)

// BenchmarkMemoryThrottlePaceAllowed: the hot path, a request that is
// allowed (1024 crawlers, each back after 1024µs at an interval of 1ms),
// with a Fetch as the handler sends it.
func BenchmarkMemoryThrottlePaceAllowed(b *testing.B) {
	m := NewMemory(MemoryConfig{})
	ids := make([]Identity, 1024)
	for i := range ids {
		ids[i] = NewIdentity("GPTBot", false, ip4(uint32(i)*7919))
	}
	p := Pace{Interval: time.Millisecond, Burst: DefaultBurst, Fetch: NewFetch("GET", "example.com", "/page.html")}
	now := epoch
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if r, _ := m.ThrottlePace(ctx0, ids[i&1023], p, now); !r.Allowed {
			b.Fatal("refused")
		}
		i++
		now = now.Add(time.Microsecond)
	}
}

// BenchmarkMemoryThrottlePaceRefused: a request that is refused, for the
// same URL each time (each one a retry).
func BenchmarkMemoryThrottlePaceRefused(b *testing.B) {
	m := NewMemory(MemoryConfig{})
	ids := make([]Identity, 1024)
	p := Pace{Interval: time.Hour, Burst: DefaultBurst, Fetch: NewFetch("GET", "example.com", "/page.html")}
	for i := range ids {
		ids[i] = NewIdentity("GPTBot", false, ip4(uint32(i)*7919))
		for range DefaultBurst {
			mustPace(b, m, ids[i], p, epoch)
		}
	}
	now := epoch
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if r, _ := m.ThrottlePace(ctx0, ids[i&1023], p, now); r.Allowed {
			b.Fatal("allowed")
		}
		i++
		now = now.Add(time.Microsecond)
	}
}
