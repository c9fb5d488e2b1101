-- mixed.lua -- wrk script for bench/soak.sh: a rotating mix of valid and
-- invalid requests to every endpoint of `strata serve`, counted by status.
--
--   wrk ... -s bench/soak/mixed.lua http://127.0.0.1:PORT
--
-- Each connection walks the list below in turn (starting at a different
-- place per thread): valid /v1/cost, /v1/place (greedy + zone), /v1/solve,
-- a job PUT / GET, extender filter and prioritize, the health endpoints;
-- and invalid ones: malformed JSON, NaN and 1e400 figures, wrong units,
-- unknown keys, absurd options, unknown paths (404), wrong methods (405),
-- a truncated body, an empty body. done() prints one line:
--   soak: requests N 2xx A 4xx B 5xx C other D errors E
-- (errors: socket connect/read/write/timeout failures wrk saw).

local cluster = '{"types":[{"name":"gpu","kind":"gpu","flops":"1TFLOPS","io_bw":"1GB/s","net_bw":"8Gbit/s","mem":"10GB","price":3.6},' ..
  '{"name":"cpu","kind":"cpu","flops":"0.5TFLOPS","io_bw":"5GB/s","net_bw":"8Gbit/s","mem":"100GB","price":1.0}],' ..
  '"zones":[{"name":"a"},{"name":"b"}],"nodes":[{"name":"n0","type":"gpu","units":4,"zone":"a","bw":"1GB/s"},' ..
  '{"name":"n1","type":"gpu","units":4,"zone":"b","bw":"1GB/s"},{"name":"c0","type":"cpu","units":4,"zone":"a","bw":"1GB/s"}]}'
local function job(samples)
  return '{"name":"tiny","batch":10,"samples":' .. samples .. ',"min_throughput":100,"alpha":0,"layers":[' ..
    '{"name":"a","flops":"1GFLOP","io":0,"act":0,"params":"1MB","mem":"1MB"},' ..
    '{"name":"b","flops":"1GFLOP","io":0,"act":0,"params":0,"mem":"1MB"}]}'
end
local function body(samples, extra)
  return '{"cluster":' .. cluster .. ',"job":' .. job(samples) .. (extra or '') .. '}'
end
local types_only = '{"cluster":{"types":[{"name":"gpu","kind":"gpu","flops":"1TFLOPS","io_bw":"1GB/s","net_bw":"8Gbit/s","mem":"10GB","price":3.6}]},"job":' .. job('3.6e6') .. '}'
local pod = '{"Pod":{"metadata":{"name":"soak-worker-0","labels":{"training.kubeflow.org/job-name":"soak",' ..
  '"training.kubeflow.org/replica-type":"worker","training.kubeflow.org/replica-index":"0"}}},' ..
  '"Nodes":{"items":[{"metadata":{"name":"g0","labels":{"node.kubernetes.io/instance-type":"gpu","topology.kubernetes.io/zone":"a"}},' ..
  '"status":{"allocatable":{"nvidia.com/gpu":"4"}}},{"metadata":{"name":"g1","labels":{"node.kubernetes.io/instance-type":"gpu"},' ..
  '"annotations":{"strata.io/bw":"nan"}},"status":{"allocatable":{"nvidia.com/gpu":"4"}}}]}}'

local H = {["Content-Type"] = "application/json"}
local reqs = {
  -- valid
  {"POST", "/v1/cost", body('3.6e6', ',"assignment":"gpu"')},
  {"POST", "/v1/place", body('3.6e6', ',"options":{"plan_method":"greedy","placement":"zone"}')},
  {"POST", "/v1/solve", body('3.6e6', ',"options":{"method":"exact","budget_ms":50}')},
  {"PUT", "/v1/jobs/soak", types_only},
  {"GET", "/v1/jobs/soak", nil},
  {"POST", "/k8s/filter", pod},
  {"POST", "/k8s/prioritize", pod},
  {"GET", "/healthz", nil},
  {"GET", "/metrics", nil},
  {"GET", "/v1/jobs", nil},
  {"POST", "/v1/place", body('3.6e6')},                                   -- 503: no policy
  -- invalid: each must be a 4xx
  {"POST", "/v1/cost", '{"cluster": {,}'},                                 -- malformed JSON
  {"POST", "/v1/cost", body('NaN', ',"assignment":"gpu"')},                -- not JSON
  {"POST", "/v1/place", body('1e400', ',"options":{"plan_method":"greedy"}')},
  {"POST", "/v1/solve", body('"inf"')},
  {"POST", "/v1/cost", body('-5', ',"assignment":"gpu"')},
  {"POST", "/v1/solve", body('3.6e6', ',"options":{"budget_ms":1e18}')},
  {"POST", "/v1/place", body('3.6e6', ',"options":{"plan_method":"greedy","samples":1e12}')},
  {"POST", "/v1/cost", body('3.6e6', ',"assignment":["gpu","tpu"]')},
  {"POST", "/v1/cost", body('3.6e6', ',"bogus":1')},
  {"POST", "/v1/cost", string.sub(body('3.6e6'), 1, 200)},               -- truncated body
  {"POST", "/v1/cost", ""},                                                -- empty body
  {"PUT", "/v1/jobs/bad name", types_only},
  {"GET", "/v1/jobs/nope", nil},                                           -- 404
  {"GET", "/v2/place", nil},                                               -- 404
  {"GET", "/v1/place", nil},                                               -- 405
  {"DELETE", "/healthz", nil},                                             -- 405
  {"POST", "/k8s/filter", '{"Pod": 3, "NodeNames": []}'},
}

local threads = {}
function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  n, s2, s4, s5, other = 0, 0, 0, 0, 0
  i = (id * 7) % #reqs
end

function request()
  i = i % #reqs + 1
  local r = reqs[i]
  return wrk.format(r[1], r[2], H, r[3])
end

function response(status, headers, body)
  n = n + 1
  if status >= 200 and status < 300 then s2 = s2 + 1
  elseif status >= 400 and status < 500 then s4 = s4 + 1
  elseif status >= 500 and status < 600 then
    -- 503 for /v1/place without a policy is expected; counted apart
    if status == 503 then other = other + 1 else s5 = s5 + 1 end
  else other = other + 1 end
end

function done(summary, latency, requests)
  local t = {n = 0, s2 = 0, s4 = 0, s5 = 0, other = 0}
  for _, th in ipairs(threads) do
    for k, _ in pairs(t) do t[k] = t[k] + (th:get(k) or 0) end
  end
  local e = summary.errors
  io.write(string.format("soak: requests %d 2xx %d 4xx %d 5xx %d 503 %d errors %d p99_ms %.2f\n",
    t.n, t.s2, t.s4, t.s5, t.other, e.connect + e.read + e.write + e.timeout,
    latency:percentile(99) / 1000))
end
