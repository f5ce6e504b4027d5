package state

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

func TestRotationsResidentsKeepTheirOwnState(t *testing.T) {
	r := NewRotations(0)
	a := netip.MustParseAddr("203.0.113.2")
	now := time.Unix(1_000_000, 0)
	for i := 0; i < RotationResidents; i++ {
		if r.Note("s", a, "", fmt.Sprintf("Resident%d", i), now, false) {
			t.Fatalf("resident %d judged as rotating", i)
		}
	}
	if !r.Note("s", a, "", "Newcomer", now.Add(time.Second), false) {
		t.Fatal("a fifth name within the window was not recognised as rotation")
	}
	// Residents keep their own state while the address rotates.
	for i := 0; i < RotationResidents; i++ {
		if r.Note("s", a, "", fmt.Sprintf("Resident%d", i), now.Add(2*time.Second), false) {
			t.Fatalf("resident %d swept into the rotation", i)
		}
	}
	// Another scope and another address are untouched.
	if r.Note("other", a, "", "Newcomer", now, false) {
		t.Fatal("rotation leaked into another scope")
	}
	if r.Note("s", netip.MustParseAddr("203.0.113.3"), "", "Newcomer", now, false) {
		t.Fatal("rotation leaked into a neighbouring IPv4 address")
	}
}

func TestRotationsIPv6SharesTheSlash64(t *testing.T) {
	r := NewRotations(0)
	now := time.Unix(1_000_000, 0)
	for i := 0; i < RotationResidents; i++ {
		a := netip.MustParseAddr(fmt.Sprintf("2001:db8:1:2::%x", i+1))
		r.Note("s", a, "", fmt.Sprintf("Tok%d", i), now, false)
	}
	if !r.Note("s", netip.MustParseAddr("2001:db8:1:2:ffff::9"), "", "Tok9", now, false) {
		t.Fatal("names from one /64 were not counted together")
	}
	if r.Note("s", netip.MustParseAddr("2001:db8:1:3::1"), "", "Tok9", now, false) {
		t.Fatal("another /64 was judged as rotating")
	}
	// An IPv4-mapped address is the IPv4 address.
	v4 := netip.MustParseAddr("198.51.100.7")
	for i := 0; i < RotationResidents; i++ {
		r.Note("s", v4, "", fmt.Sprintf("Tok%d", i), now, false)
	}
	if !r.Note("s", netip.AddrFrom16(v4.As16()), "", "Tok9", now, false) {
		t.Fatal("the IPv4-mapped form escaped the rotation of its IPv4 address")
	}
}

func TestRotationsWindowAndHold(t *testing.T) {
	r := NewRotations(0)
	a := netip.MustParseAddr("203.0.113.2")
	now := time.Unix(1_000_000, 0)
	for i := 0; i < RotationResidents; i++ {
		r.Note("s", a, "", fmt.Sprintf("Slow%d", i), now, false)
	}
	// A fifth name after the window starts a fresh set of residents.
	later := now.Add(RotationWindow + time.Second)
	if r.Note("s", a, "", "Slow9", later, false) {
		t.Fatal("a name after the window was judged as rotation")
	}
	for i := 0; i < RotationResidents-1; i++ {
		r.Note("s", a, "", fmt.Sprintf("Fast%d", i), later, false)
	}
	if !r.Note("s", a, "", "Fast9", later, false) {
		t.Fatal("rotation within the new window not recognised")
	}
	// The hold outlasts the window, counted from the last new name.
	mid := later.Add(RotationHold - time.Minute)
	if !r.Note("s", a, "", "Fast10", mid, false) {
		t.Fatal("rotation forgotten before the hold ended")
	}
	if r.Note("s", a, "", "Fast11", mid.Add(RotationHold+time.Second), false) {
		t.Fatal("rotation still held an hour after the last new name")
	}
}

// TestRotationsResidentShortcut: Resident answers for a triple Note found
// resident, only until the address's entry could be reset, never for a
// name Note judged rotating, and never after a peek alone.
func TestRotationsResidentShortcut(t *testing.T) {
	r := NewRotations(0)
	a := netip.MustParseAddr("203.0.113.2")
	const ip = "203.0.113.2"
	now := time.Unix(1_000_000, 0)
	if r.Resident("s", ip, "Bot0", now) {
		t.Fatal("unknown triple answered as resident")
	}
	r.Note("s", a, ip, "Bot0", now, true)
	if r.Resident("s", ip, "Bot0", now) {
		t.Fatal("a peek made a triple resident")
	}
	for i := 0; i < RotationResidents; i++ {
		r.Note("s", a, ip, fmt.Sprintf("Bot%d", i), now, false)
	}
	for i := 0; i < RotationResidents; i++ {
		if !r.Resident("s", ip, fmt.Sprintf("Bot%d", i), now.Add(time.Minute)) {
			t.Fatalf("resident %d not remembered", i)
		}
	}
	if r.Note("s", a, ip, "Rogue", now, false) != true {
		t.Fatal("fifth name not rotating")
	}
	if r.Resident("s", ip, "Rogue", now) {
		t.Fatal("a rotating name answered as resident")
	}
	if r.Resident("other", ip, "Bot0", now) || r.Resident("s", "203.0.113.3", "Bot0", now) {
		t.Fatal("residency leaked to another scope or address")
	}
	// The rotation began at now: residents stay while it holds, so the
	// shortcut lasts until the hold could end, not beyond.
	r.Note("s", a, ip, "Bot0", now, false)
	if !r.Resident("s", ip, "Bot0", now.Add(RotationHold)) {
		t.Fatal("resident forgotten within the hold")
	}
	if r.Resident("s", ip, "Bot0", now.Add(RotationHold+time.Second)) {
		t.Fatal("shortcut outlived the hold: Note must see the name again")
	}
	// Without rotation, a resident is remembered until its window ends.
	q := NewRotations(0)
	q.Note("s", a, ip, "Solo", now, false)
	if !q.Resident("s", ip, "Solo", now.Add(RotationWindow)) || q.Resident("s", ip, "Solo", now.Add(RotationWindow+time.Second)) {
		t.Fatal("shortcut does not end with the window")
	}
}

func TestRotationsPeekChangesNothing(t *testing.T) {
	r := NewRotations(0)
	a := netip.MustParseAddr("203.0.113.2")
	now := time.Unix(1_000_000, 0)
	for i := 0; i < 10; i++ {
		if r.Note("s", a, "", fmt.Sprintf("Peek%d", i), now, true) {
			t.Fatal("a peek on an unknown address reported rotation")
		}
	}
	for i := 0; i < RotationResidents; i++ {
		r.Note("s", a, "", fmt.Sprintf("Real%d", i), now, false)
	}
	if !r.Note("s", a, "", "Peek9", now, true) {
		t.Fatal("a peek did not see the rotation a real request would")
	}
	if r.Note("s", a, "", "Real0", now, true) {
		t.Fatal("peeked resident judged as rotating")
	}
	// The peek recorded nothing: the address is not yet rotating.
	if r.Note("s", a, "", "Real1", now, false) {
		t.Fatal("resident rotating")
	}
	if got := r.Note("s", a, "", "Peek9", now, true); !got {
		t.Fatal("peek changed the outcome")
	}
}

// TestRotationsGraduates: beyond the residents, a name that fetched
// /robots.txt from the address gets a budget of its own (it is no longer
// pooled), for at most RotationGraduates names while the entry lives; a
// peek never graduates anyone.
func TestRotationsGraduates(t *testing.T) {
	r := NewRotations(0)
	a := netip.MustParseAddr("203.0.113.2")
	const ip = "203.0.113.2"
	now := time.Unix(1_000_000, 0)
	for i := 0; i < RotationResidents; i++ {
		r.Note("s", a, ip, fmt.Sprintf("Rnd%d", i), now, false)
	}
	if !r.Note("s", a, ip, "Rnd99", now, false) {
		t.Fatal("a fifth name is not pooled")
	}
	// A newcomer that fetched /robots.txt first is never pooled.
	if r.Fetched("s", a, ip, "Polite", now.Add(time.Second)) {
		t.Fatal("a newcomer's /robots.txt fetch did not graduate it")
	}
	if r.Note("s", a, ip, "Polite", now.Add(2*time.Second), false) || r.Note("s", a, ip, "Polite", now.Add(3*time.Second), true) {
		t.Fatal("a graduate pooled")
	}
	if !r.Resident("s", ip, "Polite", now.Add(3*time.Second)) {
		t.Fatal("a graduate not remembered for the shortcut")
	}
	// A pooled name that fetches /robots.txt graduates too.
	if r.Fetched("s", a, ip, "Rnd99", now.Add(4*time.Second)) || r.Note("s", a, ip, "Rnd99", now.Add(4*time.Second), false) {
		t.Fatal("a pooled name's /robots.txt fetch did not graduate it")
	}
	// At most RotationGraduates graduate: a rogue that fetches
	// /robots.txt under each new name gains a bounded number of budgets.
	graduated := 2
	for i := 0; i < 100; i++ {
		if !r.Fetched("s", a, ip, fmt.Sprintf("Fetcher%d", i), now.Add(5*time.Second)) {
			graduated++
		}
	}
	if graduated != RotationGraduates {
		t.Fatalf("%d names graduated, want %d", graduated, RotationGraduates)
	}
	if !r.Note("s", a, ip, "Fetcher99", now.Add(6*time.Second), false) {
		t.Fatal("a name beyond the graduates is not pooled")
	}
	// Before the residents are full, a fetch makes a resident, not a
	// graduate; a peek changes nothing.
	q := NewRotations(0)
	q.Note("s", a, ip, "Peeked", now, true)
	if q.Resident("s", ip, "Peeked", now) {
		t.Fatal("a peek recorded a name")
	}
	for i := 0; i < RotationResidents; i++ {
		if q.Fetched("s", a, ip, fmt.Sprintf("Early%d", i), now) {
			t.Fatalf("fetcher %d pooled on an address with room for residents", i)
		}
	}
	for i := 0; i < RotationGraduates; i++ {
		if q.Fetched("s", a, ip, fmt.Sprintf("Late%d", i), now) {
			t.Fatalf("late fetcher %d pooled: the early ones took graduate places", i)
		}
	}
	// The graduates end with the entry: a rotation's hold.
	if !q.Note("s", a, ip, "Rnd", now, false) {
		t.Fatal("a ninth name is not pooled")
	}
	if q.Fetched("s", a, ip, "After", now.Add(RotationHold+time.Second)) {
		t.Fatal("the entry outlived its hold")
	}
	// An invalid address is never pooled.
	if q.Fetched("s", netip.Addr{}, "", "X", now) {
		t.Fatal("an invalid address pooled")
	}
}

func TestRotationsBounded(t *testing.T) {
	r := NewRotations(160)
	now := time.Unix(1_000_000, 0)
	for i := 0; i < 100_000; i++ {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		r.Note("s", a, "", "Bot", now, false)
	}
	total := 0
	for i := range r.shards {
		total += len(r.shards[i].m)
		if len(r.shards[i].m) > r.perShard {
			t.Fatalf("shard %d holds %d entries, bound %d", i, len(r.shards[i].m), r.perShard)
		}
	}
	if total > 160+16 {
		t.Fatalf("%d entries remembered, want at most ~160", total)
	}
	// The addresses spread across the shards (a shard pick that ignored the
	// address would put them all in one).
	for i := range r.shards {
		if len(r.shards[i].m) == 0 {
			t.Fatalf("shard %d empty after 100000 addresses", i)
		}
	}
	if r.Note("s", netip.Addr{}, "", "Bot", now, false) {
		t.Fatal("an invalid address rotates")
	}
}

// BenchmarkRotationsNote is the cost every unverified "*"-judged bot request
// pays to have its address's names counted.
func BenchmarkRotationsNote(b *testing.B) {
	r := NewRotations(0)
	a := netip.MustParseAddr("203.0.113.2")
	now := time.Unix(1_000_000, 0)
	b.ReportAllocs()
	for b.Loop() {
		r.Note("h:abcdef012345", a, "", "ExampleBot", now, false)
	}
}

// BenchmarkRotationsResident is what a crawler's repeated requests pay: the
// lock-free answer for a name already found resident.
func BenchmarkRotationsResident(b *testing.B) {
	r := NewRotations(0)
	a := netip.MustParseAddr("203.0.113.2")
	now := time.Unix(1_000_000, 0)
	r.Note("h:abcdef012345", a, "203.0.113.2", "ExampleBot", now, false)
	b.ReportAllocs()
	for b.Loop() {
		if !r.Resident("h:abcdef012345", "203.0.113.2", "ExampleBot", now) {
			b.Fatal("not resident")
		}
	}
}
