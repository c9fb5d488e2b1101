#!/usr/bin/env python3
"""check_manifests.py -- the manifests of deploy/kubernetes, read by the
official Kubernetes client (Debian's python3-kubernetes).

Every object of strata-scheduler.yaml must deserialise into the client's
model for its kind without losing a key (a misspelt field is an error), and
the scheduler's leader election must be allowed: some Role bound to the
scheduler's service account grants get and update on the lease that
leaderElection.resourceName names, in resourceNamespace. The scheduler
configuration embedded in the ConfigMap must say what scheduler-config.yaml
says.

One daemon serves both faces (docs/serve.md, "Deploying it"): the
extender's urlPrefix must be the loopback --extender-listen address of the
strata container in the scheduler's own pod, and the Service must select
that pod and reach the container's --listen port, which must carry a
--token-file mounted from a Secret (the API face is never open). Usage:
check_manifests.py REPO_ROOT; exit 1 with the reasons.
"""
import json
import sys

import yaml
from kubernetes.client import ApiClient

root = sys.argv[1] if len(sys.argv) > 1 else "."
errors = []
api = ApiClient()


def check_model(doc):
    """Round-trips doc through the client's model; keys it drops are errors."""
    kind = doc["kind"]
    group = doc["apiVersion"].split("/")[0] if "/" in doc["apiVersion"] else ""
    version = doc["apiVersion"].split("/")[-1]
    prefix = {"": "", "apps": "", "rbac.authorization.k8s.io": ""}.get(group, "")
    cls = "V1" + kind if version == "v1" else version.capitalize() + kind
    class Resp:  # what ApiClient.deserialize expects
        data = json.dumps(doc)
    obj = api.deserialize(Resp, prefix + cls)
    back = api.sanitize_for_serialization(obj)

    def lost(a, b, path):
        if isinstance(a, dict):
            for k, v in a.items():
                if k not in b:
                    errors.append("%s %s: key %s%s not in the client's model" %
                                  (kind, doc["metadata"]["name"], path, k))
                else:
                    lost(v, b[k], path + k + ".")
        elif isinstance(a, list):
            for i, (x, y) in enumerate(zip(a, b)):
                lost(x, y, "%s[%d]." % (path.rstrip("."), i))
    lost(doc, back, "")


with open(root + "/deploy/kubernetes/strata-scheduler.yaml") as f:
    docs = [d for d in yaml.safe_load_all(f) if d]
for d in docs:
    check_model(d)
cm = [d for d in docs if d["kind"] == "ConfigMap"][0]
embedded = yaml.safe_load(cm["data"]["scheduler-config.yaml"])
with open(root + "/deploy/kubernetes/scheduler-config.yaml") as f:
    shipped = yaml.safe_load(f)
if embedded != shipped:
    errors.append("the ConfigMap's scheduler-config.yaml differs from scheduler-config.yaml")
le = embedded["leaderElection"]
sa = [d for d in docs if d["kind"] == "ServiceAccount"][0]["metadata"]
roles = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in docs if d["kind"] == "Role"}
granted = set()
for b in (d for d in docs if d["kind"] == "RoleBinding"):
    if not any(s["name"] == sa["name"] and s["namespace"] == sa["namespace"] for s in b["subjects"]):
        continue
    role = roles.get((b["metadata"]["namespace"], b["roleRef"]["name"]))
    if not role or role["metadata"]["namespace"] != le["resourceNamespace"]:
        continue
    for r in role["rules"]:
        if "coordination.k8s.io" in r["apiGroups"] and "leases" in r["resources"] and \
                le["resourceName"] in r.get("resourceNames", [le["resourceName"]]):
            granted |= set(r["verbs"])


def flag(args, name):
    """The value of --name=V in a container's command, or None."""
    for a in args:
        if a.startswith("--%s=" % name):
            return a.split("=", 1)[1]
    return None


deps = [d for d in docs if d["kind"] == "Deployment"]
pod = None
for d in deps:
    names = [c["name"] for c in d["spec"]["template"]["spec"]["containers"]]
    if "kube-scheduler" in names:
        pod = d["spec"]["template"]
if not pod:
    errors.append("no Deployment runs a kube-scheduler container")
else:
    ctrs = {c["name"]: c for c in pod["spec"]["containers"]}
    daemon = [c for c in ctrs.values() if "serve" in (c.get("command") or [])]
    if len(daemon) != 1:
        errors.append("the scheduler's pod must run exactly one `strata serve`, runs %d" %
                      len(daemon))
    else:
        cmd = daemon[0]["command"]
        ext = flag(cmd, "extender-listen")
        url = embedded["extenders"][0]["urlPrefix"]
        if not ext or not ext.startswith("127.0.0.1:"):
            errors.append("strata serve needs --extender-listen on 127.0.0.1 (got %r): "
                          "kube-scheduler calls it without a token" % ext)
        elif url != "http://%s/k8s" % ext:
            errors.append("extender urlPrefix %s is not the daemon's --extender-listen %s" %
                          (url, ext))
        if embedded["extenders"][0].get("bindVerb") and not flag(cmd, "kube-api"):
            errors.append("the extender has bindVerb but strata serve has no --kube-api to "
                          "create Bindings through")
        listen = flag(cmd, "listen") or ""
        token = flag(cmd, "token-file")
        if not token:
            errors.append("strata serve --listen %s has no --token-file: /v1 would be open" %
                          listen)
        else:
            mounts = {m["mountPath"]: m["name"] for m in daemon[0].get("volumeMounts", [])}
            vols = {v["name"]: v for v in pod["spec"].get("volumes", [])}
            vol = vols.get(mounts.get(token.rsplit("/", 1)[0]), {})
            if "secret" not in vol:
                errors.append("--token-file %s is not on a volume from a Secret" % token)
        ports = {p.get("name"): p["containerPort"] for p in daemon[0].get("ports", [])}
        svcs = [d for d in docs if d["kind"] == "Service"]
        if not svcs:
            errors.append("no Service for the daemon's API face")
        for svc in svcs:
            sel = svc["spec"]["selector"]
            labels = pod["metadata"]["labels"]
            if any(labels.get(k) != v for k, v in sel.items()):
                errors.append("Service %s selects %s, not the scheduler's pod (%s)" %
                              (svc["metadata"]["name"], sel, labels))
            for sp in svc["spec"]["ports"]:
                tp = sp.get("targetPort", sp["port"])
                port = ports.get(tp) if isinstance(tp, str) else tp
                if not listen.endswith(":%s" % port):
                    errors.append("Service %s targets port %s, the daemon listens on %s" %
                                  (svc["metadata"]["name"], tp, listen))

for verb in ("create", "get", "update"):
    if verb not in granted:
        errors.append("leader election: no Role bound to %s grants %s on lease %s/%s" %
                      (sa["name"], verb, le["resourceNamespace"], le["resourceName"]))
for e in errors:
    print(e, file=sys.stderr)
sys.exit(1 if errors else 0)
