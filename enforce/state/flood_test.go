package state

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	floodChildEnv = "STATE_FLOOD_CHILD"
	floodN        = 1_000_000
	floodLimitMiB = 256
)

// floodResult is what a flood reports.
type floodResult struct {
	Kept            int
	HeapInuseMiB    float64
	SysMiB          float64
	FloodNsPerOp    float64 // per Throttle or Strike on new identities, last 100k
	ExistingNsPerOp float64 // Throttle on identities held, after the flood
}

// randomIdentity returns a random unverified identity: IPv4 or IPv6, and a
// random name of 4 to 24 letters.
func randomIdentity(rng *rand.Rand) Identity {
	var addr netip.Addr
	if rng.IntN(2) == 0 {
		addr = ip4(rng.Uint32())
	} else {
		var b [16]byte
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		b[0] = 0x20
		addr = netip.AddrFrom16(b)
	}
	name := make([]byte, 4+rng.IntN(21))
	for i := range name {
		name[i] = 'a' + byte(rng.IntN(26))
	}
	return NewIdentity(string(name), false, addr)
}

// floodInfo is the StrikeInfo of a flood's strike by crawler: the worst
// case, where each identity's crawler name is its own (a copy per record).
func floodInfo(crawler string) StrikeInfo {
	return StrikeInfo{Crawler: crawler, Token: "*", Line: 12, Version: "2024-06-01T12:00:00Z#3", Scope: "example.com, www.example.com on :443"}
}

// flood feeds n distinct random identities through Throttle and Strike of a
// default memory store (every identity strikes once, with a crawler name of
// its own), then measures it.
func flood(n int) floodResult {
	m := NewMemory(MemoryConfig{})
	rng := rand.New(rand.NewPCG(42, 7))
	p := DefaultStrikePolicy()
	now := epoch
	const last = 100_000 // timed, generated beforehand
	for range n - last {
		id := randomIdentity(rng)
		now = now.Add(time.Microsecond)
		_, _ = m.Throttle(ctx0, id, 10*time.Second, now)
		_, _ = m.Strike(ctx0, id, p, now, floodInfo("C"+id.Name))
	}
	tail := make([]Identity, last)
	crawlers := make([]string, last)
	for i := range tail {
		tail[i] = randomIdentity(rng)
		crawlers[i] = "C" + tail[i].Name
	}
	start := time.Now()
	for i, id := range tail {
		now = now.Add(time.Microsecond)
		_, _ = m.Throttle(ctx0, id, 10*time.Second, now)
		_, _ = m.Strike(ctx0, id, p, now, floodInfo(crawlers[i]))
	}
	var r floodResult
	r.FloodNsPerOp = float64(time.Since(start).Nanoseconds()) / last / 2
	// Decisions on identities the store holds, after the flood.
	ids := make([]Identity, 0, 1024)
	for si := range m.shards {
		for _, e := range m.shards[si].entries {
			if len(ids) < cap(ids) && e.id.Name != "" {
				ids = append(ids, e.id)
			}
		}
	}
	const k = 1_000_000
	start = time.Now()
	for i := range k {
		_, _ = m.Throttle(ctx0, ids[i%len(ids)], 10*time.Second, now)
	}
	r.ExistingNsPerOp = float64(time.Since(start).Nanoseconds()) / k
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.Kept = m.Len()
	r.HeapInuseMiB = float64(ms.HeapInuse) / (1 << 20)
	r.SysMiB = float64(ms.Sys) / (1 << 20)
	runtime.KeepAlive(m)
	runtime.KeepAlive(tail)
	runtime.KeepAlive(crawlers)
	return r
}

func TestFloodMemoryBounded(t *testing.T) {
	r := flood(floodN)
	t.Logf("flood of %d identities: kept %d, HeapInuse %.1f MiB, Sys %.1f MiB, %.0f ns/decision at the end of the flood, %.0f ns/decision on held identities",
		floodN, r.Kept, r.HeapInuseMiB, r.SysMiB, r.FloodNsPerOp, r.ExistingNsPerOp)
	if r.Kept > DefaultMaxEntries {
		t.Errorf("kept %d entries, cap %d", r.Kept, DefaultMaxEntries)
	}
	if r.Kept < DefaultMaxEntries/2 {
		t.Errorf("kept only %d entries: live entries should stay up to the cap", r.Kept)
	}
	if r.SysMiB > floodLimitMiB {
		t.Errorf("Sys %.1f MiB > %d MiB", r.SysMiB, floodLimitMiB)
	}
}

// TestFloodPeakRSS runs the flood in a child process (this test binary, see
// TestMain) and reads its peak resident set size, VmHWM.
func TestFloodPeakRSS(t *testing.T) {
	n := floodN
	if raceEnabled {
		// Under the race detector RSS is mostly shadow memory and the flood
		// is ~15x slower: check the shape on fewer identities (still twice
		// the cap). TestFloodMemoryBounded floods 1,000,000 in every build,
		// and a plain `go test` runs this one at full size.
		n = 2 * DefaultMaxEntries
		t.Logf("race build: child floods %d identities instead of %d", n, floodN)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floodChildEnv+"="+strconv.Itoa(n))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flood child: %v\n%s", err, out)
	}
	var hwmKiB int
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM-KiB "); ok {
			hwmKiB, _ = strconv.Atoi(v)
		}
	}
	if hwmKiB == 0 {
		t.Fatalf("flood child reported no VmHWM:\n%s", out)
	}
	t.Logf("child process:\n%s", out)
	limit := floodLimitMiB
	if raceEnabled {
		// The race detector's shadow memory is not the program's: allow
		// for it, the non-race run checks the real bound.
		limit *= 4
	}
	if mib := hwmKiB / 1024; mib > limit {
		t.Errorf("peak RSS %d MiB > %d MiB", mib, limit)
	}
}

// floodChild runs in the child process of TestFloodPeakRSS.
func floodChild() int {
	n, err := strconv.Atoi(os.Getenv(floodChildEnv))
	if err != nil || n < 200_000 {
		fmt.Println("bad", floodChildEnv, err)
		return 1
	}
	r := flood(n)
	fmt.Printf("flood of %d identities: kept %d, HeapInuse %.1f MiB, Sys %.1f MiB, %.0f ns/decision at the end of the flood, %.0f ns/decision on held identities\n",
		n, r.Kept, r.HeapInuseMiB, r.SysMiB, r.FloodNsPerOp, r.ExistingNsPerOp)
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Println("reading /proc/self/status:", err)
		return 1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
			fmt.Printf("VmHWM-KiB %s\n", v)
			fmt.Printf("peak RSS %s kB\n", v)
		}
	}
	return 0
}
