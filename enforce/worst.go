package enforce

// MaxTargetLength is the length, in octets, of the longest request target
// (path and query, as given to [Group.Decide]) for which the engine promises
// its worst-case cost: up to this length, one decision reads the target a
// bounded number of times whatever the group's rules and the target hold
// (see "Cost" in the package documentation). Longer targets still get the
// exact answer, in time that grows with their length; a server may refuse
// them from crawlers (414 URI Too Long) to keep the promise.
const MaxTargetLength = 8 << 10
