module github.com/caddyrobots/caddy-robots/bench

go 1.26.0

require (
	github.com/caddyrobots/caddy-robots v0.0.0
	github.com/temoto/robotstxt v1.1.2
)

require (
	github.com/dunglas/httpsfv v1.1.1 // indirect
	golang.org/x/text v0.42.0 // indirect
)

replace github.com/caddyrobots/caddy-robots => ../
