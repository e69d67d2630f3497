-- The mixed profile of `make bench-server` (scripts/bench-server.sh), the same for both
-- servers: about 80% reads, 20% writes, random ids in the seeded range.
--   30% GET /posts/:id            25% GET /authors/:id (with its posts)
--   25% GET /posts?page=P&per=20  10% POST /posts       10% PATCH /posts/:id
-- Environment: BENCH_AUTHORS (the seed's N; posts are 10 per author); BENCH_ONLY=get-post,
-- get-author, list, create or update runs that one request alone (to see where a figure
-- comes from).
-- At the end it prints one line, BENCH requests=… for the script to read.

local authors = tonumber(os.getenv("BENCH_AUTHORS") or "100")
local posts = authors * 10
local pages = math.max(1, math.floor(posts / 20))
local json = { ["Content-Type"] = "application/json" }

local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(os.time() * 1000 + id)
  writes, reads = 0, 0
end

local only = ({ ["get-post"] = 1, ["get-author"] = 31, list = 56, create = 81, update = 91 })[os.getenv("BENCH_ONLY") or ""]

function request()
  local r = only or math.random(100)
  if r <= 30 then
    return wrk.format("GET", "/posts/" .. math.random(posts))
  elseif r <= 55 then
    return wrk.format("GET", "/authors/" .. math.random(authors))
  elseif r <= 80 then
    return wrk.format("GET", "/posts?page=" .. math.random(pages) .. "&per=20")
  elseif r <= 90 then
    local body = string.format(
      '{"author_id":%d,"title":"Load %d","body":"Written under load.","score":%d,"published":%s}',
      math.random(authors), math.random(1000000), math.random(0, 1000), math.random(2) == 1 and "true" or "false")
    return wrk.format("POST", "/posts", json, body)
  else
    local body = string.format('{"score":%d,"title":"Edited %d"}', math.random(0, 1000), math.random(1000000))
    return wrk.format("PATCH", "/posts/" .. math.random(posts), json, body)
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d max_us=%d non2xx=%d socket=%d connect=%d read=%d write=%d timeout=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), latency.max,
    e.status, e.connect + e.read + e.write + e.timeout, e.connect, e.read, e.write, e.timeout))
end
