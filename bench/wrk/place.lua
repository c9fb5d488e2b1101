-- place.lua -- wrk script for bench/serve_wrk.sh: POST /v1/place with a
-- 32-layer job on a 64-node cluster (4 types, 4 zones), built here so that
-- the benchmark needs no other file.
--
--   wrk ... -s bench/wrk/place.lua http://127.0.0.1:PORT/v1/place -- MODE [miss|miss-job]
--
-- MODE "policy": the loaded policy plans and places (options {}).
-- MODE "greedy": no policy needed: options plan_method greedy, placement zone.
-- MODE "healthz": GET /healthz, no body: the floor that loopback HTTP and
-- this machine's scheduling put under every latency.
-- MODE "cost": for POST /v1/cost: score the plan with every layer on A100
-- (no planner runs: what the daemon itself costs per request).
-- "miss": every request carries a different job name (1000 bodies in turn),
-- so that no body is found among those the daemon already parsed (its cache
-- holds 64): the full parse path, JSON and config loader, on every request.
-- The jobs are the same problem under other names, so the daemon's plan memo
-- (keyed by the problem, not the name) answers all but the first.
-- "miss-job": every request's job has figures of its own: layer l00's flops
-- are "1.NNNNNNNNNNNNGFLOP" (1 GFLOP plus n thousandths of a FLOP, a distinct
-- double for each n), n made of the clock's seconds (so that the warm-up and
-- the measured run, two wrk processes, never share one), the request's
-- count and wrk's thread, never repeated. Neither the parse cache nor the
-- plan memo can answer: every request is parsed and decoded.
-- done() prints one line of figures that serve_wrk.sh collects.

local function cluster()
  local types = {
    '{"name":"cpu","kind":"cpu","flops":"1.2TFLOPS","io_bw":"3.1GB/s","net_bw":"10Gbit/s","mem":"192GiB","price":0.68}',
    '{"name":"V100","kind":"gpu","flops":"8.4TFLOPS","io_bw":"3.94GB/s","net_bw":"25Gbit/s","mem":"32GiB","price":3.06}',
    '{"name":"T4","kind":"gpu","flops":"3.24TFLOPS","io_bw":"3.94GB/s","net_bw":"25Gbit/s","mem":"16GiB","price":0.978}',
    '{"name":"A100","kind":"gpu","flops":"60TFLOPS","io_bw":"6GB/s","net_bw":"100Gbit/s","mem":"80GiB","price":4.1}',
  }
  local names = {"cpu", "V100", "T4", "A100"}
  local nodes = {}
  for i = 0, 63 do
    local t = names[(i % 4) + 1]
    local units = (t == "cpu") and 16 or 8
    nodes[#nodes + 1] = string.format(
      '{"name":"n%02d","type":"%s","units":%d,"ps_slots":2,"zone":"z%d","bw":"25Gbit/s","latency":"20us","loss":"0.01%%"}',
      i, t, units, i % 4)
  end
  return '{"types":[' .. table.concat(types, ",") .. '],'
      .. '"zones":[{"name":"z0"},{"name":"z1"},{"name":"z2"},{"name":"z3"}],'
      .. '"inter_bw":"10Gbit/s","inter_latency":"1ms",'
      .. '"nodes":[' .. table.concat(nodes, ",") .. ']}'
end

local function job(name)
  local layers = {}
  for i = 0, 31 do
    layers[#layers + 1] = string.format(
      '{"name":"l%02d","flops":"%dGFLOP","io":"%s","act":"512KB","params":"%dMB","mem":"500MB"}',
      i, 1 + i % 5, (i < 2) and "64KB" or "0", 1 + i % 7)
  end
  return string.format('{"name":"%s","batch":64,"samples":1e8,"min_throughput":2000,"layers":[%s]}',
                       name, table.concat(layers, ","))
end

local bodies = {}
local counter = 0
local threads = {}

-- Each thread gets its number (the global id of its Lua state), so that
-- miss-job's n never repeats across threads (each has its own counter).
function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  local mode = args[1] or "greedy"
  local tail
  if mode == "policy" then tail = ',"options":{}'
  elseif mode == "cost" then tail = ',"assignment":"A100"'
  else tail = ',"options":{"plan_method":"greedy","placement":"zone"}' end
  if mode == "healthz" then
    wrk.method = "GET"
    return
  end
  local cl = cluster()
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  if args[2] == "miss-job" then
    -- the body around layer l00's flops, built once; n is spliced in
    local marker = '"flops":"1GFLOP"'
    local whole = '{"cluster":' .. cl .. ',"job":' .. job("bench") .. tail .. '}'
    local at = string.find(whole, marker, 1, true)
    local pre = string.sub(whole, 1, at - 1) .. '"flops":"1.'
    local post = 'GFLOP"' .. string.sub(whole, at + #marker)
    -- n < 1e12: 1e6 clock seconds (11 days) x 1e6; up to 64 threads
    local base = (os.time() % 1000000) * 1000000 + (tonumber(id) or 0)
    wrk.body = pre .. string.format("%012d", base) .. post
    request = function()
      counter = counter + 1
      return wrk.format(nil, nil, nil, pre .. string.format("%012d", base + counter * 64) .. post)
    end
    return
  end
  local n = (args[2] == "miss") and 1000 or 1
  for i = 1, n do
    bodies[i] = '{"cluster":' .. cl .. ',"job":' .. job("bench-" .. i) .. tail .. '}'
  end
  wrk.body = bodies[1]
  if n > 1 then
    request = function()
      counter = counter + 1
      return wrk.format(nil, nil, nil, bodies[(counter % n) + 1])
    end
  end
end

function done(summary, latency, requests)
  local secs = summary.duration / 1e6
  local non2xx = summary.errors.status
  local sockerr = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  io.write(string.format(
    "RESULT requests=%d seconds=%.2f rps=%.0f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f non2xx=%d socket_errors=%d\n",
    summary.requests, secs, summary.requests / secs,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000,
    latency:percentile(99) / 1000, latency:percentile(99.9) / 1000, latency.max / 1000,
    non2xx, sockerr))
end
