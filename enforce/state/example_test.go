package state_test

import (
	"context"
	"fmt"
	"log"
	"net/netip"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/redis/go-redis/v9"
)

func ExampleMemory() {
	s := state.NewMemory(state.MemoryConfig{})
	id := state.NewIdentity("GPTBot", false, netip.MustParseAddr("203.0.113.7"))
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	T := 5 * time.Second // Crawl-delay: 5

	r, _ := s.Throttle(ctx, id, T, now)
	fmt.Println(id, r.Allowed)
	r, _ = s.Throttle(ctx, id, T, now.Add(time.Second))
	fmt.Println(r.Allowed, r.RetryAfter) // due at +5s, tolerance 1s
	r, _ = s.Throttle(ctx, id, T, now.Add(4*time.Second))
	fmt.Println(r.Allowed)
	// Output:
	// u:GPTBot@203.0.113.7/32 true
	// false 3s
	// true
}

func ExampleNewFailover() {
	opts, err := state.ParseRedisURL("redis://127.0.0.1:6379/0")
	if err != nil {
		log.Fatal(err)
	}
	client := redis.NewUniversalClient(opts)
	shared, err := state.NewRedis(state.RedisConfig{Client: client, Site: "example.com", CloseClient: true})
	if err != nil {
		log.Fatal(err)
	}
	s := state.NewFailover(shared, state.NewMemory(state.MemoryConfig{}), func(err error) {
		// count it; log at a limited rate
	})
	defer s.Close()
	_ = s // s.Throttle, s.Strike, s.Banned as with any Store
}

func ExampleMemory_Strike() {
	s := state.NewMemory(state.MemoryConfig{})
	ctx := context.Background()
	id := state.NewIdentity("*", false, netip.MustParseAddr("203.0.113.7"))
	policy := state.StrikePolicy{Strikes: 3, Window: 10 * time.Minute, Ban: time.Hour}
	now := time.Unix(1_700_000_000, 0).UTC()
	var r state.BanResult
	for i, line := range []int{4, 4, 9} {
		r, _ = s.Strike(ctx, id, policy, now.Add(time.Duration(i)*time.Second), state.StrikeInfo{
			Crawler: "ContentGrabber", Token: "*", Line: line, Version: "v2", Scope: "example.com on :443",
		})
	}
	fmt.Println(r.Banned, r.Until.Sub(now))
	fmt.Printf("%s (judged by %q) banned by %s\n", r.Info.Crawler, r.Info.Token, r.Info.Scope)
	for _, k := range r.Info.Strikes {
		fmt.Printf("  line %d of %s at +%v\n", k.Line, k.Version, k.At.Sub(now))
	}

	// Lift every ban that crawler earned.
	lifted, _ := s.UnbanWhere(ctx, func(b state.Ban) bool { return b.Info.Crawler == "ContentGrabber" }, now)
	fmt.Println(len(lifted), lifted[0].Key)
	// Output:
	// true 1h0m2s
	// ContentGrabber (judged by "*") banned by example.com on :443
	//   line 4 of v2 at +0s
	//   line 4 of v2 at +1s
	//   line 9 of v2 at +2s
	// 1 u:*@203.0.113.7/32
}
