-- A mixed load for bench/mixed.sh: 90% browsers, 10% bots from 100,000
-- addresses (sent as X-Forwarded-For to a Caddy that trusts loopback as its
-- proxy, strictly), 1% impostors claiming Googlebot, 2% random Host names
-- on the catch-all site. Paths: mostly allowed, some disallowed.
-- Browsers send what they send to a secure origin (Chrome treats
-- *.localhost as one): Fetch Metadata for a navigation, and Chrome its
-- client hints. The directive does not judge *.localhost names over plain
-- HTTP, but the load should look like people wherever it is pointed.
local navigate = { ["Sec-Fetch-Site"] = "none", ["Sec-Fetch-Mode"] = "navigate", ["Sec-Fetch-User"] = "?1", ["Sec-Fetch-Dest"] = "document" }
local chrome = { ["Sec-CH-UA"] = '"Google Chrome";v="131", "Chromium";v="131", "Not_A Brand";v="24"', ["Sec-CH-UA-Mobile"] = "?0", ["Sec-CH-UA-Platform"] = '"Windows"' }
local browsers = {
  { "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", chrome },
  { "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15" },
  { "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0" },
  { "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1" },
}
local bots = {
  "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
  "GPTBot/1.2 (+https://openai.com/gptbot)",
  "CCBot/2.0 (https://commoncrawl.org/faq/)",
  "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)",
  "ExampleCrawler/1.0 (+https://example.com/bot)",
  "python-requests/2.31.0",
  "Scrapy/2.11.0 (+https://scrapy.org)",
}
local impostor = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
local paths = { "/", "/about.html", "/index.html", "/about.html?x=1", "/private/", "/private/secret.html" }
counts = {}  -- global: done() reads it from each thread
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("id", #threads)
end

function init(args)
  math.randomseed(os.time() * 1000 + id)
  counts = {}
end

local function addr()
  local n = math.random(0, 99999)
  return string.format("198.18.%d.%d", math.floor(n / 256) % 256, n % 256)
end

function request()
  local r = math.random(100)
  local b = browsers[math.random(#browsers)]
  local ua, xff, host = b[1], addr(), "mixed.localhost"
  local h = {}
  if r <= 1 then
    ua = impostor
  elseif r <= 10 then
    ua = bots[math.random(#bots)]
  else
    for k, v in pairs(navigate) do h[k] = v end
    for k, v in pairs(b[2] or {}) do h[k] = v end
  end
  if math.random(100) <= 2 then
    host = string.format("h%08x.flood.localhost", math.random(0, 0x7fffffff))
  end
  h["Host"], h["User-Agent"], h["X-Forwarded-For"] = host, ua, xff
  return wrk.format("GET", paths[math.random(#paths)], h)
end

function response(status, headers, body)
  counts[status] = (counts[status] or 0) + 1
end

function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    local c = t:get("counts")
    for k, v in pairs(c) do total[k] = (total[k] or 0) + v end
  end
  local keys = {}
  for k in pairs(total) do table.insert(keys, k) end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do table.insert(parts, k .. "=" .. total[k]) end
  io.write(string.format("MIXED requests=%d errors=%d p50_us=%d p90_us=%d p99_us=%d statuses=%s\n",
    summary.requests, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), table.concat(parts, ",")))
end
