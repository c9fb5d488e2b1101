#!/usr/bin/env bash
# serve_attack.sh -- `strata serve` under a slowloris, a partial-body and a
# busy load.
#
# Starts the daemon on 127.0.0.1 (ephemeral port, its default limits unless
# flags are given after --), then runs two loads from loopback addresses
# 127.0.0.2... (so that the per-address limit applies to each attacker and
# not to the prober at 127.0.0.1), each for a bounded time:
#
#   slowloris     N connections each sending one header byte per second
#   partial body  N connections each declaring a body of 1 MiB - 1 byte and
#                 sending all of it but the last byte, then holding
#
# and then restarts it with `--threads 2 --policy checkpoints/general.h5`
# (plus the same flags) for a third:
#
#   busy          two clients from 127.0.0.2 each POSTing /v1/place back
#                 to back, a `decode: sample` of the largest request the
#                 default limits let through: 256 layers on 150 nodes at
#                 1024 samples (estimated just under --request-mem-mb's
#                 256 MiB; 151 nodes is refused with 422), which
#                 --request-cpu-ms cuts at 5 s ("stopped": true)
#
# and prints, for each: the daemon's resident memory (VmRSS) before, at
# the peak during and 2 s after the connections close; how many attacking
# connections the daemon closed; and the latency of GET /healthz (one every
# 50 ms from 127.0.0.1) as p50/p99/max. Everything runs on loopback and
# stops by itself (about 60 s with the defaults; the busy load waits up
# to 10 s past --seconds for the requests in flight). Python 3's standard
# library drives the sockets.
#
#   bench/serve_attack.sh [--bin PATH] [--slow-conns N] [--body-conns N]
#                         [--seconds S] [--busy-seconds S]
#                         [--busy-size LAYERSxNODESxSAMPLES] [-- SERVE-FLAGS...]
#
#   --bin PATH       the strata program (default $STRATA_BIN or build/strata)
#   --slow-conns N   slowloris connections (default 1000)
#   --body-conns N   partial-body connections (default 600)
#   --seconds S      length of each load (default 15)
#   --busy-seconds S length of the busy load (default: --seconds)
#   --busy-size LxNxS  the busy load's request (default 256x151x1024)
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${STRATA_BIN:-build/strata}
SLOW=1000
BODY=600
SECONDS_EACH=15
BUSY_SECONDS=""
BUSY_SIZE=256x150x1024
POLICY=checkpoints/general.h5
while [ $# -gt 0 ]; do
    case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --slow-conns) SLOW=$2; shift 2 ;;
    --body-conns) BODY=$2; shift 2 ;;
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    --busy-seconds) BUSY_SECONDS=$2; shift 2 ;;
    --busy-size) BUSY_SIZE=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--bin PATH] [--slow-conns N] [--body-conns N] [--seconds S] [--busy-seconds S] [--busy-size LxNxS] [-- FLAGS...]" >&2
       exit 2 ;;
    esac
done
BUSY_SECONDS=${BUSY_SECONDS:-$SECONDS_EACH}
[ -f "$POLICY" ] || { echo "serve_attack: $POLICY is missing" >&2; exit 2; }
[ -x "$BIN" ] || { echo "serve_attack: $BIN is not built" >&2; exit 2; }
ulimit -n 8192 2>/dev/null || true

tmp=$(mktemp -d)
pid=""
cleanup() {
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT

# start_daemon FLAGS...: starts `strata serve` on an ephemeral port; sets
# pid and port.
start_daemon() {
    : >"$tmp/out"
    "$BIN" serve --listen 127.0.0.1:0 --quiet "$@" >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    for _ in $(seq 100); do
        grep -q "listening on" "$tmp/out" 2>/dev/null && break
        sleep 0.1
    done
    port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/out")
    [ -n "$port" ] || { echo "serve_attack: the daemon did not start" >&2; cat "$tmp/err" >&2; exit 1; }
}
stop_daemon() {
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=""
}

start_daemon "$@"
echo "strata serve pid $pid port $port; $SLOW slowloris and $BODY partial-body connections," \
     "$SECONDS_EACH s each; serve flags: ${*:-(defaults)}"

cat >"$tmp/driver.py" <<'EOF'
import json, socket, sys, threading, time

mode = sys.argv[1]
pid, port, slow, bodies = (int(a) for a in sys.argv[2:6])
seconds = float(sys.argv[6])

def rss_mib():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return -1.0

def healthz_ms():
    t0 = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            data += b
        s.close()
        ok = data.startswith(b"HTTP/1.1 200")
    except OSError:
        ok = False
    return (time.monotonic() - t0) * 1e3, ok

def attacker(i):
    """A socket from 127.0.0.(2 + i // 50), or None when refused."""
    try:
        s = socket.socket()
        s.bind((f"127.0.0.{2 + i // 50}", 0))
        s.settimeout(2)
        s.connect(("127.0.0.1", port))
        s.setblocking(False)
        return s
    except OSError:
        return None

def push(s, data):
    """Sends what the socket takes now; returns the rest (b"" when done or dead)."""
    try:
        return data[s.send(data):]
    except (BlockingIOError, InterruptedError):
        return data
    except OSError:
        return b""

def closed(s):
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return True
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))] if xs else float("nan")

def run(name, conns, opening, step):
    before = rss_mib()
    socks = [attacker(i) for i in range(conns)]
    accepted = sum(1 for s in socks if s is not None)
    pending = {s: memoryview(opening) for s in socks if s is not None}
    lat, fails, peak = [], 0, before
    t_end = time.monotonic() + seconds
    next_step = time.monotonic() + 1.0
    while time.monotonic() < t_end:
        for s in list(pending):
            pending[s] = push(s, pending[s])
            if not len(pending[s]):
                del pending[s]
        ms, ok = healthz_ms()
        lat.append(ms)
        fails += not ok
        peak = max(peak, rss_mib())
        if step and time.monotonic() >= next_step:
            for s in socks:
                if s is not None and s not in pending:
                    push(s, step)
            next_step += 1.0
        time.sleep(0.05)
    cut = sum(1 for s in socks if s is not None and closed(s))
    for s in socks:
        if s is not None:
            s.close()
    time.sleep(2.0)
    after = rss_mib()
    print(f"{name}: {accepted} of {conns} connected, {cut} closed by the daemon within {seconds:g} s; "
          f"RSS {before:.1f} MiB before, {peak:.1f} MiB peak, {after:.1f} MiB 2 s after; "
          f"/healthz p50 {pct(lat, 50):.1f} ms p99 {pct(lat, 99):.1f} ms max {max(lat):.1f} ms "
          f"({len(lat)} probes, {fails} failed)")
    sys.stdout.flush()

def place_body(layers, nodes, samples):
    """A /v1/place body shaped like tests/test_serve_budget.c's: `layers`
    layers on `nodes` nodes (gpu and cpu in turn, zones a and b), a
    sampling decode of `samples` plans."""
    types = [{"name": "gpu", "kind": "gpu", "flops": "1TFLOPS", "io_bw": "1GB/s",
              "net_bw": "8Gbit/s", "mem": "10GB", "price": 3.6},
             {"name": "cpu", "kind": "cpu", "flops": "0.5TFLOPS", "io_bw": "5GB/s",
              "net_bw": "8Gbit/s", "mem": "100GB", "price": 1.0}]
    ns = [{"name": f"n{i}", "type": "cpu" if i % 2 else "gpu", "units": 4,
           "zone": "a" if i % 2 else "b", "bw": "1GB/s"} for i in range(nodes)]
    ls = [{"name": f"l{i}", "flops": "1GFLOP", "io": 0, "act": 0,
           "params": "1MB" if i == 0 else "0", "mem": "1MB"} for i in range(layers)]
    return json.dumps({"cluster": {"types": types, "zones": [{"name": "a"}, {"name": "b"}],
                                   "nodes": ns},
                       "job": {"name": "big", "batch": 10, "samples": 3.6e6,
                               "min_throughput": 100, "alpha": 0, "layers": ls},
                       "options": {"decode": "sample", "samples": samples,
                                   "seed": 7}}).encode()

def busy(size):
    """Two clients from 127.0.0.2 POST `size` back to back for `seconds`
    (a request in flight at the end is waited for, up to 15 s) while
    /healthz is probed."""
    layers, nodes, samples = (int(x) for x in size.split("x"))
    body = place_body(layers, nodes, samples)
    head = (b"POST /v1/place HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body))
    counts = {"ok": 0, "stopped": 0, "other": 0}
    statuses = {}
    lock = threading.Lock()
    t_end = time.monotonic() + seconds

    def client():
        while time.monotonic() < t_end:
            status, stopped = None, False
            try:
                s = socket.socket()
                s.bind(("127.0.0.2", 0))
                s.settimeout(20)
                s.connect(("127.0.0.1", port))
                s.sendall(head + body)
                data = b""
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    data += b
                s.close()
                status = int(data.split(b" ", 2)[1])
                if status == 200:
                    ans = json.loads(data.split(b"\r\n\r\n", 1)[1])
                    stopped = bool(ans.get("stopped"))
            except (OSError, ValueError, IndexError):
                pass
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
                if status == 200:
                    counts["ok"] += 1
                    counts["stopped"] += stopped
                else:
                    counts["other"] += 1

    before = rss_mib()
    threads = [threading.Thread(target=client, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    lat, fails, peak = [], 0, before
    while time.monotonic() < t_end or any(t.is_alive() for t in threads):
        if time.monotonic() > t_end + 15:
            break
        ms, ok = healthz_ms()
        lat.append(ms)
        fails += not ok
        peak = max(peak, rss_mib())
        time.sleep(0.05)
    time.sleep(2.0)
    after = rss_mib()
    other = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items(), key=str) if k != 200)
    print(f"busy, 2 clients x {size} (layers x nodes x samples), {len(body)} byte body: "
          f"{counts['ok']} place requests answered 200 ({counts['stopped']} stopped) in "
          f"{seconds:g} s, {counts['other']} others{' (' + other + ')' if other else ''}; "
          f"RSS {before:.1f} MiB before, {peak:.1f} MiB peak, {after:.1f} MiB 2 s after; "
          f"/healthz p50 {pct(lat, 50):.1f} ms p99 {pct(lat, 99):.1f} ms max {max(lat):.1f} ms "
          f"({len(lat)} probes, {fails} failed)")
    sys.stdout.flush()

if mode == "busy":
    busy(sys.argv[7])
    sys.exit(0)

run("slowloris", slow, b"POST /v1/place HTTP/1.1\r\nHost: x\r\n", b"X")
body = 1048575
run("partial body", bodies,
    b"POST /v1/cost HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % body + b" " * (body - 1),
    None)
EOF
timeout $((4 * SECONDS_EACH + 60)) python3 "$tmp/driver.py" attack "$pid" "$port" "$SLOW" "$BODY" "$SECONDS_EACH"
stop_daemon

start_daemon --threads 2 --policy "$POLICY" "$@"
echo "strata serve pid $pid port $port; busy load $BUSY_SIZE, $BUSY_SECONDS s;" \
     "serve flags: --threads 2 --policy $POLICY $*"
timeout $((BUSY_SECONDS + 40)) python3 "$tmp/driver.py" busy "$pid" "$port" 0 0 "$BUSY_SECONDS" "$BUSY_SIZE"
