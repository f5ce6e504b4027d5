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
