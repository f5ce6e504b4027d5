package state

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// rotate makes a rotating: RotationResidents names, then one more, which
// Note must report unproven.
func rotate(t *testing.T, r *Rotations, scope string, a netip.Addr, now time.Time) {
	t.Helper()
	for i := range RotationResidents {
		r.Note(scope, a, "", fmt.Sprintf("Resident%d", i), now, false)
	}
	if !r.Note(scope, a, "", "Rnd0", now, false) {
		t.Fatal("a fifth name is not unproven")
	}
}

// TestRotationsPoolPerShape: the unproven names of a rotating address
// spend the pool of their client's shape, the first RotationShapes shapes
// each their own and every later shape the overflow pool; a name's pool
// does not depend on the name, and another address, scope or hold has
// pools of its own.
func TestRotationsPoolPerShape(t *testing.T) {
	r := NewRotations(0)
	a := netip.MustParseAddr("203.0.113.2")
	now := time.Unix(1_000_000, 0)
	rotate(t, r, "s", a, now)
	const rogue, wget = 0x1111, 0x2222
	pr := r.Pool("s", a, rogue, now, false)
	if pr == RotationOverflow || pr != r.Pool("s", a, rogue, now.Add(time.Second), false) {
		t.Fatalf("the rogue's shape: pool %q, then %q", pr, r.Pool("s", a, rogue, now, false))
	}
	pw := r.Pool("s", a, wget, now, false)
	if pw == pr || pw == RotationOverflow {
		t.Fatalf("wget's shape shares a pool with the rogue's: %q, %q", pw, pr)
	}
	// The names are the shapes': the same in every process, whatever
	// came first there.
	q := NewRotations(0)
	rotate(t, q, "s", a, now)
	if got := q.Pool("s", a, wget, now, false); got != pw {
		t.Fatalf("wget's pool is %q in one process and %q in another", pw, got)
	}
	// The first RotationShapes shapes have pools of their own, the rest
	// share one.
	pools := map[string]bool{pr: true, pw: true}
	for i := range 100 {
		pools[r.Pool("s", a, uint64(0x9000+i), now, false)] = true
	}
	if len(pools) != RotationShapes+1 || !pools[RotationOverflow] {
		t.Fatalf("%d pools for 102 shapes (%v), want %d and the overflow", len(pools), pools, RotationShapes)
	}
	if got := r.Pool("s", a, wget, now, false); got != pw {
		t.Fatalf("a shape lost its pool to later shapes: %q", got)
	}
	// Another address and another scope start with no shapes.
	b := netip.MustParseAddr("203.0.113.3")
	rotate(t, r, "s", b, now)
	rotate(t, r, "other", a, now)
	for i := range RotationShapes {
		for _, k := range []struct {
			scope string
			addr  netip.Addr
		}{{"s", b}, {"other", a}} {
			if got := r.Pool(k.scope, k.addr, uint64(0x7000+i), now, false); got == RotationOverflow {
				t.Fatalf("%s %s: shape %d overflowed: pools leaked between addresses or scopes", k.scope, k.addr, i)
			}
		}
	}
	// The shapes end with the entry: a rotation's hold.
	later := now.Add(RotationHold + time.Second)
	rotate(t, r, "s", a, later)
	for i := range RotationShapes {
		if got := r.Pool("s", a, uint64(0x5000+i), later, false); got == RotationOverflow {
			t.Fatalf("shape %d overflowed after the hold: the shapes outlived their entry", i)
		}
	}
	// An invalid address has no shapes of its own.
	if got := r.Pool("s", netip.Addr{}, wget, now, false); got != RotationOverflow {
		t.Fatalf("an invalid address: pool %q", got)
	}
}

// TestRotationsPoolPeek: a peek answers what a request would get and
// records nothing.
func TestRotationsPoolPeek(t *testing.T) {
	r := NewRotations(0)
	a := netip.MustParseAddr("198.51.100.9")
	now := time.Unix(1_000_000, 0)
	if got := r.Pool("s", a, 1, now, true); got != poolName(1) {
		t.Fatalf("peek at an unknown address: %q", got)
	}
	rotate(t, r, "s", a, now)
	for i := range 10 {
		if got := r.Pool("s", a, uint64(100+i), now, true); got != poolName(uint64(100+i)) {
			t.Fatalf("peek %d: %q, want the shape's own pool (nothing recorded)", i, got)
		}
	}
	for i := range RotationShapes {
		r.Pool("s", a, uint64(i), now, false)
	}
	if got := r.Pool("s", a, 100, now, true); got != RotationOverflow {
		t.Fatalf("peek with no room left: %q, want the overflow pool", got)
	}
	if got := r.Pool("s", a, 2, now, true); got != poolName(2) {
		t.Fatalf("peek at a known shape: %q", got)
	}
}

// TestRotationsPoolsBoundARogueThatRotatesShapes: however many names and
// shapes a rogue shows, the budgets its address has are the residents',
// the graduates' and RotationShapes+1 pools: the bound the doc comment
// states.
func TestRotationsPoolsBoundARogueThatRotatesShapes(t *testing.T) {
	r := NewRotations(0)
	a := netip.MustParseAddr("2001:db8:5::1")
	now := time.Unix(1_000_000, 0)
	budgets := map[string]bool{}
	for i := range 10_000 {
		name := fmt.Sprintf("Rnd%d", i)
		if i%3 == 0 {
			r.Fetched("s", a, "", name, now) // and fetches /robots.txt as it goes
		}
		if !r.Note("s", a, "", name, now, false) {
			budgets[name] = true
			continue
		}
		budgets[r.Pool("s", a, uint64(i)*0x9e3779b97f4a7c15, now, false)] = true
	}
	if want := RotationResidents + RotationGraduates + RotationShapes + 1; len(budgets) != want {
		t.Fatalf("a rogue rotating names and shapes spent %d budgets, want %d", len(budgets), want)
	}
}

// TestRedisPoolsPerShapeAcrossInstances: two instances sharing a Redis
// store each learn the rotation, and name a shape's pool alike: the
// rogue's shape drains its one pool on both, and wget's pool, keyed by its
// own shape, stays unspent on both.
func TestRedisPoolsPerShapeAcrossInstances(t *testing.T) {
	addr := sharedRedis(t)
	site := freshSite("pools.example")
	stores := [2]*Redis{newRedisStore(t, addr, site), newRedisStore(t, addr, site)}
	for _, s := range stores {
		s.callerClock = true
	}
	rots := [2]*Rotations{NewRotations(0), NewRotations(0)}
	a := netip.MustParseAddr("192.0.2.44")
	now := time.Unix(1_800_000_000, 0)
	const rogue, wget = 0xabc, 0xdef
	for i := range rots {
		rotate(t, rots[i], "s", a, now)
		rots[i].Pool("s", a, uint64(0x100+i), now, false) // each instance saw another shape first
	}
	pace := Pace{Interval: time.Second / RotationPoolNames, Burst: RotationPoolNames}
	spend := func(i int, shape uint64) bool {
		t.Helper()
		id := NewIdentity(rots[i].Pool("s", a, shape, now, false), false, a)
		res, err := stores[i].ThrottlePace(ctx0, id, pace, now)
		if err != nil {
			t.Fatal(err)
		}
		return res.Allowed
	}
	allowed := 0
	for n := range 100 {
		if spend(n%2, rogue) {
			allowed++
		}
	}
	if allowed > RotationPoolNames+1 {
		t.Fatalf("the rogue's shape got %d requests at one instant from two instances, want its one pool's burst", allowed)
	}
	for i := range stores {
		if !spend(i, wget) {
			t.Fatalf("instance %d: wget's first request refused beside the rogue's drained pool", i)
		}
	}
}

// BenchmarkRotationsPool is what an unproven name's request on a rotating
// address pays, besides Note, for its pool.
func BenchmarkRotationsPool(b *testing.B) {
	r := NewRotations(0)
	a := netip.MustParseAddr("203.0.113.2")
	now := time.Unix(1_000_000, 0)
	for i := range RotationResidents + 1 {
		r.Note("h:abcdef012345", a, "", fmt.Sprintf("Bot%d", i), now, false)
	}
	b.ReportAllocs()
	for b.Loop() {
		r.Pool("h:abcdef012345", a, 0x2222, now, false)
	}
}
