#!/usr/bin/env python3
"""kube_extender.py -- play kube-scheduler against a real `strata serve`.

Builds, with Debian's python3-kubernetes models serialised as the API
server serialises them (ApiClient().sanitize_for_serialization), the
V1Node objects of a three-type, two-zone cluster and the V1Pod objects of
a mixed three-stage training job as two controllers create them:

  - the Kubeflow training operator (TFJob): labels
    training.kubeflow.org/{job-name, operator-name, replica-type,
    replica-index, job-role}, an ownerReference to the TFJob;
  - the JobSet controller (pods of `strata manifest`): labels
    jobset.sigs.k8s.io/{jobset-name, replicatedjob-name, job-index,
    job-key}, batch.kubernetes.io/job-completion-index, plus strata's
    contract (labels strata.io/{job, role, stage, type, group}, annotations
    strata.io/{zone, layers, index-base, plan, nodes}).

Then, for each pod, it does what kube-scheduler does with an extender:
POST /k8s/filter with ExtenderArgs {Pod, Nodes: NodeList}, POST
/k8s/prioritize with the nodes that passed, and binds the pod to the best
score (ties at random, as kube-scheduler's selectHost). It asserts:

  1. every pod of the TFJob lands on a node of its stage's type in its
     planned zone, with the pods in order (ps first: they do not tolerate
     the GPU nodes' taint and are shown the CPU nodes only), reversed and
     shuffled (the same node for a pod whatever the order);
  2. a daemon killed (SIGKILL) mid-job and restarted on the same --state
     file answers the same for the remaining pods; a second daemon sharing
     the file answers the same too;
  3. the same job name in two namespaces makes two jobs with their own
     plans, the second planned on the units the first leaves free
     (occupancy), and deleting a job gives its units back;
  4. a pod whose index the plan does not know is refused: every node in
     FailedAndUnresolvableNodes with the reason;
  5. JobSet pods carrying strata's annotations are placed by them by a
     daemon that has no job registered at all;
  6. registered replica counts are the plan's: workers 6 and ps 4 give a
     plan of exactly 6 and 4 tasks, and 2 workers (fewer than the 5 the
     job needs) is refused with the reason;
  7. a --state file that is not a state file stops the daemon at start,
     with the file named;
  8. a TFJob with a Chief (registered with tfReplicaSpecs Chief 1, Worker
     4, PS 3): the chief pod (replica-type chief, job-role master) lands
     as worker 0 of the plan, Kubeflow worker i as plan worker i + 1;
  9. the bind verb: a daemon with --kube-api, pointed at a fake API server
     that reads every Binding into the official client's V1Binding model
     (no key lost, kind Binding, target a Node, the pod's name, namespace
     and uid) and checks the bearer token, binds the pods kube-scheduler
     hands it; a pod bound elsewhere than planned (the scheduler's other
     plugins outscored the extender) has its placement recorded on the
     node it was bound to (GET /v1/cluster's holders); the API server's
     refusal (409, already bound) comes back in the bind's Error; a daemon
     without --kube-api answers the bind with an Error saying so;
 10. the bind memory outlives the daemon: daemon A filters and prioritizes
     every pod of a job (one worker and one ps then bound elsewhere than
     planned), A is stopped, daemon B on the same --state file binds them:
     the placement rows and GET /v1/cluster's occupancy are those of an
     uninterrupted run (one daemon filtering and binding the same pods to
     the same nodes), the moved tasks recorded on the nodes they run on.

Usage: kube_extender.py STRATA_BIN WORKDIR
"""
import http.client
import http.server
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

from kubernetes.client import (ApiClient, V1Binding, V1Container, V1Node, V1NodeList, V1NodeSpec,
                               V1NodeStatus, V1ObjectMeta, V1OwnerReference, V1Pod, V1PodSpec,
                               V1ResourceRequirements, V1ListMeta, V1Taint, V1Toleration)

SER = ApiClient().sanitize_for_serialization
TIES = random.Random(1819)  # kube-scheduler breaks equal scores at random

# ---- the cluster: three types, two zones ---------------------------------------------------
# cpu-big: 1e12 FLOP/s, 192GB; gpu-mem: 1e14, 64GB; gpu-fast: 1e15, 16GB.
# The job's three layers each fit one type only (docs in the job below).
TYPES = [
    {"name": "cpu-big", "kind": "cpu", "flops": 1e12, "io_bw": 1e10, "net_bw": 1e9,
     "mem": "192GB", "price": 1.0},
    {"name": "gpu-mem", "kind": "gpu", "flops": 1e14, "io_bw": 1e10, "net_bw": 1e9,
     "mem": "64GB", "price": 3.0},
    {"name": "gpu-fast", "kind": "gpu", "flops": 1e15, "io_bw": 1e10, "net_bw": 1e9,
     "mem": "16GB", "price": 4.0},
]
ZONES = ["zone-a", "zone-b"]
# Job: B 10, R 100, alpha 0.05.
#   emb  100GB: only cpu-big holds it; 1 unit.
#   mid  40GB, 5e11 FLOP: not gpu-fast (16GB); cpu-big C = 5 s, q = 50,
#        alpha q >= 1: never R; gpu-mem C = 0.05 s: 1 unit.
#   head 1GB, 2e13 FLOP: cpu-big and gpu-mem C >= 2 s, alpha q >= 1: never R;
#        gpu-fast C = 0.2 s, q = 2: 3 units (k = 2 gives 1.9 < 2).
# So the plan is [cpu-big, gpu-mem, gpu-fast], 5 workers (1 + 1 + 3), 3 ps.
JOB = {"batch": 10, "samples": 1e6, "min_throughput": 100, "alpha": 0.05, "layers": [
    {"name": "emb", "flops": 1e6, "io": 0, "act": 1e3, "params": 0, "mem": "100GB"},
    {"name": "mid", "flops": 5e11, "io": 0, "act": 1e3, "params": 0, "mem": "40GB"},
    {"name": "head", "flops": 2e13, "io": 0, "act": 1e3, "params": 0, "mem": "1GB"},
]}
NODE_NAMES = []


def v1_node(name, itype, zone, gpus):
    alloc = {"cpu": "95", "memory": "750Gi", "pods": "110"}
    ann = {}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    else:
        ann["strata.io/units"] = "4"  # a CPU node's units are strata's to say
    return V1Node(
        api_version="v1", kind="Node",
        metadata=V1ObjectMeta(name=name, annotations=ann, resource_version="4242",
                              uid="uid-" + name, labels={
                                  "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                  "node.kubernetes.io/instance-type": itype,
                                  "topology.kubernetes.io/zone": zone,
                                  "topology.kubernetes.io/region": "r1"}),
        # GPU node groups are tainted (as EKS and GKE do): pods that do not
        # tolerate it (the ps tasks) never see them
        spec=V1NodeSpec(provider_id="aws:///" + name, taints=[V1Taint(
            key="nvidia.com/gpu", value="present", effect="NoSchedule")] if gpus else None),
        status=V1NodeStatus(allocatable=alloc, capacity=dict(alloc)))


def nodes():
    out = []
    for zone in ZONES:
        for t in TYPES:
            name = "%s-%s" % (t["name"], zone[-1])
            out.append(v1_node(name, t["name"], zone, 0 if t["kind"] == "cpu" else 4))
    return out


def registered_cluster():
    """The cluster as registered: the same nodes in the config schema."""
    ns = []
    for zone in ZONES:
        for t in TYPES:
            ns.append({"name": "%s-%s" % (t["name"], zone[-1]), "type": t["name"], "units": 4,
                       "zone": zone, "bw": "1GB/s"})
    return {"types": TYPES, "zones": [{"name": z} for z in ZONES], "nodes": ns}


def tfjob_pod(ns, job, role, index, has_chief=False):
    """A TFJob replica's pod as the training operator creates it (the
    replica type in lower case; job-role master on the chief, or on worker
    0 of a job without one)."""
    labels = {"training.kubeflow.org/job-name": job,
              "training.kubeflow.org/operator-name": "tfjob-controller",
              "training.kubeflow.org/replica-type": role,
              "training.kubeflow.org/replica-index": str(index)}
    if role == "chief" or (role == "worker" and index == 0 and not has_chief):
        labels["training.kubeflow.org/job-role"] = "master"
    tol = [V1Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")] \
        if role in ("worker", "chief") else None
    return V1Pod(
        api_version="v1", kind="Pod",
        metadata=V1ObjectMeta(
            name="%s-%s-%d" % (job, role, index), namespace=ns, labels=labels,
            uid="pod-%s-%s-%s-%d" % (ns, job, role, index),
            owner_references=[V1OwnerReference(api_version="kubeflow.org/v1", kind="TFJob",
                                               name=job, uid="tfjob-" + job, controller=True,
                                               block_owner_deletion=True)]),
        spec=V1PodSpec(scheduler_name="strata-scheduler", restart_policy="Never",
                       tolerations=tol,
                       containers=[V1Container(name="tensorflow", image="tf:2.15",
                                               resources=V1ResourceRequirements(
                                                   requests={"cpu": "4", "memory": "16Gi"}))]))


def jobset_pods(ns, job, plan):
    """The pods of `strata manifest`'s JobSet for plan: one replicated job
    per stage's workers and one for the ps tasks, with the contract's
    labels and annotations."""
    pods = []
    groups = {}
    for role in ("workers", "ps"):
        for t in plan[role]:
            g = ("worker-s%d" % t["stage"]) if role == "workers" else "ps"
            groups.setdefault((role, g), []).append(t)
    for (role, g), tasks in sorted(groups.items()):
        r = "worker" if role == "workers" else "ps"
        for ci, t in enumerate(tasks):
            labels = {"jobset.sigs.k8s.io/jobset-name": job,
                      "jobset.sigs.k8s.io/replicatedjob-name": g,
                      "jobset.sigs.k8s.io/job-index": "0",
                      "jobset.sigs.k8s.io/job-key": "k" + g,
                      "batch.kubernetes.io/job-completion-index": str(ci),
                      "job-name": "%s-%s-0" % (job, g),
                      "strata.io/job": job, "strata.io/role": r, "strata.io/group": g,
                      "strata.io/type": t["type"]}
            if r == "worker":
                labels["strata.io/stage"] = str(t["stage"])
            ann = {"batch.kubernetes.io/job-completion-index": str(ci),
                   "strata.io/zone": t["zone"], "strata.io/index-base": str(tasks[0]["index"]),
                   "strata.io/plan": "5eed", "strata.io/nodes": ",".join(x["node"] for x in tasks)}
            if r == "worker":
                ann["strata.io/layers"] = "%d-%d" % (t["stage"], t["stage"])
            pods.append((r, t["index"], V1Pod(
                api_version="v1", kind="Pod",
                metadata=V1ObjectMeta(name="%s-%s-0-%d-x" % (job, g, ci), namespace=ns,
                                      labels=labels, annotations=ann),
                spec=V1PodSpec(scheduler_name="strata-scheduler", subdomain=job,
                               tolerations=[V1Toleration(key="nvidia.com/gpu", operator="Exists",
                                                         effect="NoSchedule")],
                               containers=[V1Container(name="train", image="strata:1")]))))
    return pods


# ---- the daemon ----------------------------------------------------------------------------

class Daemon:
    def __init__(self, binary, state, log, extra=()):
        args = [binary, "serve", "--listen", "127.0.0.1:0", "--threads", "2"] + list(extra)
        if state:
            args += ["--state", state]
        self.log = open(log, "ab")
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log)
        line = self.p.stdout.readline().decode()
        if "listening on 127.0.0.1:" not in line:
            self.p.kill()
            raise SystemExit("strata serve did not start: %r (log %s)" % (line, log))
        self.port = int(line.rsplit(":", 1)[1].split()[0].rstrip(","))

    def req(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.request(method, path, json.dumps(body) if body is not None else None,
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, (json.loads(data) if data else None)

    def kill(self):
        self.p.send_signal(signal.SIGKILL)
        self.p.wait(10)

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(30)


class FakeAPI(http.server.BaseHTTPRequestHandler):
    """The pods/binding subresource of an API server: each Binding is read
    into the official client's V1Binding model and checked; bound pods are
    kept in server.bound; a second binding of a pod is refused with 409 and
    a Status, as the API server does."""
    TOKEN = "sa-token-1819"

    def log_message(self, *a):
        pass

    def answer(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        m = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding", self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        problems = []
        if not m:
            problems.append("path %s is not a pod's binding" % self.path)
        if self.headers.get("Authorization") != "Bearer " + self.TOKEN:
            problems.append("Authorization %r" % self.headers.get("Authorization"))
        doc = json.loads(body)

        class Resp:
            data = body
        b = ApiClient().deserialize(Resp, "V1Binding")
        assert isinstance(b, V1Binding)
        if SER(b) != doc:
            problems.append("the V1Binding model does not hold the body: %r vs %r" % (SER(b), doc))
        if m and (b.metadata.namespace, b.metadata.name) != (m.group(1), m.group(2)):
            problems.append("metadata %s/%s vs path" % (b.metadata.namespace, b.metadata.name))
        if (b.api_version, b.kind, b.target.api_version, b.target.kind) != \
                ("v1", "Binding", "v1", "Node") or not b.target.name:
            problems.append("not a v1 Binding to a Node: %r" % doc)
        self.server.seen.append(doc)
        if problems:
            self.server.problems += problems
            self.answer(400, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                              "message": "; ".join(problems), "reason": "BadRequest",
                              "code": 400})
            return
        key = (b.metadata.namespace, b.metadata.name)
        if key in self.server.bound:
            self.answer(409, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                              "message": "pod %s is already assigned to node \"%s\"" % (
                                  b.metadata.name, self.server.bound[key]),
                              "reason": "Conflict", "code": 409})
            return
        self.server.bound[key] = b.target.name
        self.answer(201, doc)


def fake_api():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeAPI)
    srv.bound, srv.seen, srv.problems = {}, [], []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def bind(d, pod, node):
    """kube-scheduler's bind through the extender (ExtenderBindingArgs)."""
    md = pod.metadata
    st, res = d.req("POST", "/k8s/bind", {"PodName": md.name, "PodNamespace": md.namespace,
                                         "PodUID": md.uid, "Node": node})
    assert st == 200, (st, res)
    return res["Error"]


def tolerated(pod, node):
    """kube-scheduler's TaintToleration filter, for NoSchedule taints."""
    for t in node.spec.taints or []:
        if t.effect != "NoSchedule":
            continue
        if not any(tol.key == t.key and (tol.operator == "Exists" or tol.value == t.value)
                   for tol in pod.spec.tolerations or []):
            return False
    return True


def schedule(d, pod, node_objs):
    """One scheduling cycle of kube-scheduler with the extender: its own
    filters (taints), the extender's filter, prioritize, bind to the best.
    Returns (node, filter answer)."""
    node_objs = [n for n in node_objs if tolerated(pod, n)]
    args = {"Pod": SER(pod), "Nodes": SER(V1NodeList(api_version="v1", kind="NodeList",
                                                      metadata=V1ListMeta(), items=node_objs)),
            "NodeNames": None}
    st, res = d.req("POST", "/k8s/filter", args)
    assert st == 200, (st, res)
    kept = [n["metadata"]["name"] for n in (res["Nodes"] or {}).get("items") or []]
    if not kept:
        return None, res
    args["Nodes"]["items"] = [n for n in args["Nodes"]["items"] if n["metadata"]["name"] in kept]
    st, scores = d.req("POST", "/k8s/prioritize", args)
    assert st == 200, (st, scores)
    # kube-scheduler's selectHost: the highest score, ties broken at random
    top = max(h["Score"] for h in scores)
    return TIES.choice(sorted(h["Host"] for h in scores if h["Score"] == top)), res


def register(d, ns, job, replicas=None, expect=(201, 200)):
    body = {"cluster": registered_cluster(), "job": dict(JOB, name=job),
            "options": {"plan_method": "greedy", "placement": "zone"}}
    if replicas:
        body["replicas"] = replicas
    st, o = d.req("PUT", "/v1/jobs/%s/%s" % (ns, job), body)
    assert st in expect, (st, o)
    return o


def plan_of(d, ns, job):
    st, o = d.req("GET", "/v1/jobs/%s/%s" % (ns, job))
    assert st == 200, (st, o)
    return o["extender"]


def node_info():
    return {n.metadata.name: (n.metadata.labels["node.kubernetes.io/instance-type"],
                              n.metadata.labels["topology.kubernetes.io/zone"]) for n in nodes()}


def check_landing(plan, placed, what):
    info = node_info()
    for (role, idx), node in placed.items():
        t = plan["workers" if role == "worker" else "ps"][idx]
        assert node is not None, "%s: %s %d was not placed" % (what, role, idx)
        ntype, nzone = info[node]
        if role == "worker":
            assert ntype == t["type"], "%s: worker %d (stage %d, %s) landed on %s (%s)" % (
                what, idx, t["stage"], t["type"], node, ntype)
        assert nzone == t["zone"], "%s: %s %d planned in %s landed on %s in %s" % (
            what, role, idx, t["zone"], node, nzone)


def place_all(d, pods):
    placed = {}
    for role, idx, pod in pods:
        node, _ = schedule(d, pod, nodes())
        placed[(role, idx)] = node
    return placed


def main():
    binary, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    state = os.path.join(work, "state.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(state + suffix):
            os.remove(state + suffix)
    log = os.path.join(work, "serve.log")
    d = Daemon(binary, state, log)
    try:
        # ---- 1. one plan whatever the order -----------------------------------------------
        reg = register(d, "team-a", "train")
        plan = reg["extender"]
        assert plan["planned"], plan
        types = [w["type"] for w in plan["workers"]]
        assert sorted(set(types)) == ["cpu-big", "gpu-fast", "gpu-mem"], types
        assert (len(plan["workers"]), len(plan["ps"])) == (5, 3), plan
        pods = [("ps", i, tfjob_pod("team-a", "train", "ps", i)) for i in range(3)] + \
               [("worker", i, tfjob_pod("team-a", "train", "worker", i)) for i in range(5)]
        base = place_all(d, pods)
        check_landing(plan, base, "in order (ps first)")
        rev = place_all(d, list(reversed(pods)))
        assert rev == base, ("reversed", rev, base)
        rng = random.Random(16)
        for k in range(3):
            sh = list(pods)
            rng.shuffle(sh)
            got = place_all(d, sh)
            assert got == base, ("shuffled %d" % k, got, base)
        assert plan_of(d, "team-a", "train")["workers"] == plan["workers"]
        print("order: 8 TFJob pods land alike in order, reversed and 3 shuffles:",
              ", ".join("%s%d->%s" % (r[0], i, n) for (r, i), n in sorted(base.items())))
        # the same answers came with Node objects matched to the last call's
        # bytes (filter sees the nodes a pod tolerates, prioritize those kept:
        # the lists differ from call to call, so some are read in full)
        c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
        c.request("GET", "/metrics")
        page = c.getresponse().read().decode()
        c.close()
        seen = {l.split('"')[1]: int(l.split()[-1]) for l in page.splitlines()
                if l.startswith("strata_extender_nodes_total{")}
        assert seen.get("reused", 0) > 0 and seen.get("read", 0) > 0, seen
        print("nodes: %d matched to the last body's bytes, %d read in full" %
              (seen["reused"], seen["read"]))

        # ---- 4. a pod the plan does not know ------------------------------------------------
        node, res = schedule(d, tfjob_pod("team-a", "train", "worker", 9), nodes())
        assert node is None
        un = res["FailedAndUnresolvableNodes"]
        assert sorted(un) == sorted(n.metadata.name for n in nodes()), un  # workers see all
        assert all("worker 9 is not in its plan" in why for why in un.values()), un
        print("refused: worker 9:", list(un.values())[0])

        # ---- 2. a daemon killed mid-job answers the same ------------------------------------
        half = pods[:4]
        first = place_all(d, half)
        d.kill()
        d = Daemon(binary, state, log)
        rest = place_all(d, pods[4:])
        first.update(rest)
        assert first == base, ("restarted", first, base)
        # a second replica on the same file
        d2 = Daemon(binary, state, log)
        try:
            assert place_all(d2, pods) == base
            # ---- 3. two namespaces, occupancy ------------------------------------------------
            regb = register(d2, "team-b", "train")  # written by the second replica
            planb = regb["extender"]
            assert regb["namespace"] == "team-b" and planb["planned"], regb
            podsb = [("ps", i, tfjob_pod("team-b", "train", "ps", i)) for i in range(3)] + \
                    [("worker", i, tfjob_pod("team-b", "train", "worker", i)) for i in range(5)]
            got_b = place_all(d, podsb)  # answered by the first replica
            check_landing(planb, got_b, "team-b")
            assert place_all(d, pods) == base, "team-b's registration moved team-a's pods"
            # gpu-fast holds 4 units per node: team-a's 3 take most of one node,
            # so team-b's 3 cannot share it
            fast_a = {w["node"] for w in plan["workers"] if w["type"] == "gpu-fast"}
            fast_b = {w["node"] for w in planb["workers"] if w["type"] == "gpu-fast"}
            assert not fast_a & fast_b, (fast_a, fast_b)
            print("namespaces: team-a gpu-fast on %s, team-b on %s" % (sorted(fast_a),
                                                                        sorted(fast_b)))
            # deleting team-a frees its units: team-c may take them
            st, _ = d.req("DELETE", "/v1/jobs/team-a/train")
            assert st == 204
            st, _ = d2.req("GET", "/v1/jobs/team-a/train")
            assert st == 404, "the second replica still knows a deleted job"
            regc = register(d2, "team-c", "train")
            fast_c = {w["node"] for w in regc["extender"]["workers"] if w["type"] == "gpu-fast"}
            assert fast_c == fast_a, (fast_c, fast_a)
        finally:
            d2.stop()

        # ---- 6. replica counts ----------------------------------------------------------------
        for job in ("team-b/train", "team-c/train"):  # their gpu-fast units back
            st, _ = d.req("DELETE", "/v1/jobs/" + job)
            assert st == 204
        o = register(d, "team-d", "big", {"Worker": {"replicas": 6}, "PS": {"replicas": 4}})
        p6 = o["extender"]
        assert (len(p6["workers"]), len(p6["ps"])) == (6, 4), p6
        assert p6["replicas"] == {"worker": 6, "ps": 4}
        podsd = [("ps", i, tfjob_pod("team-d", "big", "ps", i)) for i in range(4)] + \
                [("worker", i, tfjob_pod("team-d", "big", "worker", i)) for i in range(6)]
        check_landing(p6, place_all(d, podsd), "6 workers, 4 ps")
        st, err = d.req("PUT", "/v1/jobs/team-d/small", {
            "cluster": registered_cluster(), "job": dict(JOB, name="small"),
            "options": {"plan_method": "greedy"}, "replicas": {"worker": 2, "ps": 3}})
        assert st == 422 and "needs 5 workers" in err["error"], (st, err)
        print("replicas: 6 workers and 4 ps planned; 2 workers refused:", err["error"])

        # ---- 8. a TFJob with a Chief -------------------------------------------------------
        st, _ = d.req("DELETE", "/v1/jobs/team-d/big")  # its ps slots back
        assert st == 204
        o = register(d, "team-e", "chiefly", {"Chief": {"replicas": 1},
                                             "Worker": {"replicas": 4}, "PS": {"replicas": 3}})
        pc = o["extender"]
        assert pc["replicas"] == {"worker": 5, "ps": 3, "chief": 1}, pc["replicas"]
        podse = [("chief", 0, tfjob_pod("team-e", "chiefly", "chief", 0, True))] + \
                [("worker", i, tfjob_pod("team-e", "chiefly", "worker", i, True))
                 for i in range(4)] + \
                [("ps", i, tfjob_pod("team-e", "chiefly", "ps", i, True)) for i in range(3)]
        got = place_all(d, podse)
        # the plan's view: the chief is worker 0, Kubeflow worker i is worker i + 1
        as_plan = {("worker", 0 if r == "chief" else i + 1) if r != "ps" else (r, i): n
                   for (r, i), n in got.items()}
        check_landing(pc, as_plan, "chief")
        assert got[("chief", 0)] == pc["workers"][0]["node"], (got, pc["workers"][0])
        print("chief: TFJob chief on %s (plan worker 0, %s); workers on %s" % (
            got[("chief", 0)], pc["workers"][0]["type"],
            ", ".join(got[("worker", i)] for i in range(4))))
    finally:
        d.stop()

    # ---- 5. JobSet pods carry their plan: a daemon with no job at all ------------------------
    fresh = Daemon(binary, None, log)
    try:
        js = jobset_pods("team-a", "train", plan)
        got = place_all(fresh, js)
        check_landing(plan, got, "jobset")
        planned = {("worker" if r == "workers" else "ps", t["index"]): t["node"]
                   for r in ("workers", "ps") for t in plan[r]}
        assert got == planned, (got, planned)
        rng = random.Random(7)
        rng.shuffle(js)
        assert place_all(fresh, js) == planned
        st, o = fresh.req("GET", "/v1/jobs")
        assert st == 200 and o["jobs"] == []
        print("jobset: 8 pods on their planned nodes from their annotations, no registry")
    finally:
        fresh.stop()

    # ---- a state file that is not one: the daemon refuses to start -----------------------------
    bad = os.path.join(work, "bad.db")
    with open(bad, "w") as f:
        f.write("not a database " * 300)
    r = subprocess.run([binary, "serve", "--listen", "127.0.0.1:0", "--state", bad],
                       capture_output=True, timeout=30)
    msg = r.stderr.decode()
    assert r.returncode != 0 and bad in msg and "not a readable SQLite database" in msg, \
        (r.returncode, msg)
    print("bad state file:", msg.strip().splitlines()[-1])

    # ---- 9. the bind verb, through a fake API server --------------------------------------------
    api = fake_api()
    tok = os.path.join(work, "sa-token")
    with open(tok, "w") as f:
        f.write(FakeAPI.TOKEN + "\n")
    state9 = os.path.join(work, "state9.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(state9 + suffix):
            os.remove(state9 + suffix)
    d = Daemon(binary, state9, log, ["--kube-api", "http://127.0.0.1:%d" % api.server_port,
                                     "--kube-token-file", tok])
    try:
        st, _ = d.req("PUT", "/v1/cluster", {"cluster": registered_cluster()})
        assert st == 200
        plan = register(d, "team-f", "bound")["extender"]
        pods = [("ps", i, tfjob_pod("team-f", "bound", "ps", i)) for i in range(3)] + \
               [("worker", i, tfjob_pod("team-f", "bound", "worker", i)) for i in range(5)]
        moved = None
        for role, idx, pod in pods:
            node, res = schedule(d, pod, nodes())
            kept = [n["metadata"]["name"] for n in res["Nodes"]["items"]]
            if role == "worker" and moved is None and len(kept) > 1:
                # the scheduler's own plugins outscore the extender: another node that fits
                node = [n for n in kept if n != node][0]
                moved = (idx, plan["workers"][idx]["node"], node)
            err = bind(d, pod, node)
            assert err == "", err
            assert api.bound[("team-f", pod.metadata.name)] == node
        assert not api.problems, api.problems
        assert len(api.seen) == 8 and all(s["metadata"]["uid"].startswith("pod-team-f")
                                          for s in api.seen), api.seen
        assert moved, "no worker had two nodes to choose from"
        st, occ = d.req("GET", "/v1/cluster")
        assert st == 200, (st, occ)
        holders = {n["name"]: [(h["job"], h["role"], h["index"]) for h in n["holders"]]
                   for n in occ["nodes"]}
        idx, planned, there = moved
        assert ("team-f/bound", "worker", idx) in holders[there], (moved, holders)
        assert ("team-f/bound", "worker", idx) not in holders[planned], (moved, holders)
        # a pod bound already: the API server's refusal is the bind's Error
        err = bind(d, pods[-1][2], "gpu-fast-a")
        assert "409" in err and "already assigned" in err, err
        print("bind: 8 Bindings created, each a valid V1Binding; worker %d planned on %s, bound "
              "to %s, recorded there; a second bind: %s" % (idx, planned, there, err))
    finally:
        d.stop()
        api.shutdown()
    d = Daemon(binary, None, log)
    try:
        err = bind(d, tfjob_pod("team-f", "bound", "ps", 0), "cpu-big-a")
        assert "without --kube-api" in err, err
    finally:
        d.stop()

    # ---- 10. the bind memory across a restart ----------------------------------------------
    api = fake_api()
    try:
        pods = [("ps", i, tfjob_pod("team-g", "held", "ps", i)) for i in range(3)] + \
               [("worker", i, tfjob_pod("team-g", "held", "worker", i)) for i in range(5)]
        moved_r, occ_r, chosen = bind_run(binary, work, log, api, tok, pods, "restart", None)
        moved_u, occ_u, _ = bind_run(binary, work, log, api, tok, pods, "straight", chosen)
        assert moved_r == moved_u, (moved_r, moved_u)
        assert {m[0] for m in moved_r} == {"ps", "worker"}, moved_r
        holders = {n["name"]: [(h["job"], h["role"], h["index"]) for h in n["holders"]]
                   for n in occ_r["nodes"]}
        for role, idx, planned, there in moved_r:
            assert ("team-g/held", role, idx) in holders[there], (role, idx, there, holders)
            assert ("team-g/held", role, idx) not in holders[planned], (role, idx, holders)
        assert occ_r == occ_u, ("restarted between filter and bind", occ_r, occ_u)
        print("bind across a restart: filtered by one daemon, bound by the next on the same "
              "file: %s recorded where bound, occupancy as an uninterrupted run's" % ", ".join(
                  "%s %d %s -> %s" % m for m in moved_r))
    finally:
        api.shutdown()
    print("kube_extender: all checks passed")


def bind_run(binary, work, log, api, tok, pods, tag, chosen):
    """Registers team-g/held on a fresh state file, schedules every pod
    (filter and prioritize) with daemon A, then binds them: through a daemon
    B started on the same file after A is stopped (tag "restart"), or
    through A itself ("straight"). Pods go to the nodes of chosen
    ({pod name: node}) when given; else to the best score, but the first
    worker and the first ps with another node kept go to that other node.
    Returns (moved [(role, index, planned, bound)], GET /v1/cluster, the
    nodes chosen)."""
    state = os.path.join(work, "state10-%s.db" % tag)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(state + suffix):
            os.remove(state + suffix)
    api.bound.clear()
    kube = ["--kube-api", "http://127.0.0.1:%d" % api.server_port, "--kube-token-file", tok]
    d = Daemon(binary, state, log, kube)
    b = None
    try:
        st, _ = d.req("PUT", "/v1/cluster", {"cluster": registered_cluster()})
        assert st == 200
        plan = register(d, "team-g", "held")["extender"]
        picked, moved = {}, []
        for role, idx, pod in pods:
            node, res = schedule(d, pod, nodes())
            kept = [n["metadata"]["name"] for n in res["Nodes"]["items"]]
            if chosen is not None:
                node = chosen[pod.metadata.name]
                assert node in kept, (pod.metadata.name, node, kept)
            elif len(kept) > 1 and not any(m[0] == role for m in moved):
                node = sorted(n for n in kept if n != node)[0]
            planned = plan["workers" if role == "worker" else "ps"][idx]["node"]
            if node != planned:
                moved.append((role, idx, planned, node))
            picked[pod.metadata.name] = node
        if tag == "restart":
            d.stop()
            d = None
            b = Daemon(binary, state, log, kube)
        binder = b or d
        for role, idx, pod in pods:
            err = bind(binder, pod, picked[pod.metadata.name])
            assert err == "", err
        assert len(api.bound) == len(pods), api.bound
        st, occ = binder.req("GET", "/v1/cluster")
        assert st == 200, (st, occ)
        return moved, occ, picked
    finally:
        for x in (d, b):
            if x:
                x.stop()


if __name__ == "__main__":
    main()
