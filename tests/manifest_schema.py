#!/usr/bin/python3
"""manifest_schema.py -- `strata manifest` output checked offline against the resources' schemas.

Usage: /usr/bin/python3 tests/manifest_schema.py STRATA_BIN TMPDIR  (ctest: manifest_schema;
run from the source tree, so that strata finds configs/catalogue/instances.yaml).

For configs/default.yaml and every configs/models/* on each shipped cluster,
with the plan methods exact, homogeneous and (on the default) greedy, it
writes the manifest of each kind (jobset, volcano, auto, and tfjob /
pytorchjob where the plan is homogeneous), with and without a placement,
for TensorFlow and PyTorch, and checks:

- the object against tests/data/k8s-schemas/*.schema.json (python3-jsonschema;
  README.md there names the CRDs they come from);
- every pod template, and every JobSet child Job's spec, field by field
  against the official Kubernetes client's models (python3-kubernetes):
  no field the model lacks, every value of the model's type, and
  deserialisation into V1PodTemplateSpec / V1JobSpec;
- the pod contract with the extender (docs/serve.md): labels, annotations,
  index bases that number the tasks 0..n-1 in plan order, planned nodes;
- that --kind tfjob is refused, naming the types, for a plan that mixes
  types.

Before all that it checks that the checkers reject a broken object, so that
the test can fail. Exit status 0 when every check passes, 1 otherwise.
"""
import copy
import json
import os
import subprocess
import sys

import jsonschema
import kubernetes.client as kc
import yaml

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMAS = os.path.join(SRC, "tests", "data", "k8s-schemas")
KIND_SCHEMA = {"JobSet": "jobset", "Job": "volcano-job", "TFJob": "tfjob",
               "PyTorchJob": "pytorchjob"}
CONTRACT_LABELS = {"strata.io/job", "strata.io/role", "strata.io/stage", "strata.io/type",
                   "strata.io/group"}
IMAGE = "registry.example/strata-train:1"
# the kinds written for each plan, with (True) or without a placement by `zone`
COMBOS = [("jobset", False), ("jobset", True), ("volcano", True), ("auto", False),
          ("tfjob", False), ("pytorchjob", True)]


class Bad(Exception):
    pass


def check_value(val, t, path):
    """Checks val against a Kubernetes client type name ('str', 'list[V1EnvVar]', ...)."""
    if t.startswith("list["):
        if not isinstance(val, list):
            raise Bad(f"{path}: expected a list ({t})")
        for i, v in enumerate(val):
            check_value(v, t[5:-1], f"{path}[{i}]")
    elif t.startswith("dict("):
        if not isinstance(val, dict):
            raise Bad(f"{path}: expected a mapping ({t})")
        sub = t[t.index(",") + 1:-1].strip()
        for k, v in val.items():
            check_value(v, sub, f"{path}.{k}")
    elif t == "str":
        if not isinstance(val, str):
            raise Bad(f"{path}: expected a string, got {val!r}")
    elif t == "int":
        if not isinstance(val, int) or isinstance(val, bool):
            raise Bad(f"{path}: expected an integer, got {val!r}")
    elif t == "bool":
        if not isinstance(val, bool):
            raise Bad(f"{path}: expected a boolean, got {val!r}")
    elif t == "object":
        pass
    elif hasattr(kc, t):
        check_model(val, t, path, top=False)
    else:
        raise Bad(f"{path}: unknown client type {t}")


API = kc.ApiClient()


def check_model(data, klass, path, top=True):
    """Checks a mapping field by field against the client model `klass`, then (top level)
    deserialises it."""
    if not isinstance(data, dict):
        raise Bad(f"{path}: expected a {klass} mapping")
    cls = getattr(kc, klass)
    by_json = {v: k for k, v in cls.attribute_map.items()}
    for key, val in data.items():
        if key not in by_json:
            raise Bad(f"{path}.{key}: no such field in {klass}")
        check_value(val, cls.openapi_types[by_json[key]], f"{path}.{key}")
    if not top:
        return
    try:
        API._ApiClient__deserialize(data, klass)
    except (ValueError, TypeError) as e:
        raise Bad(f"{path}: {klass}: {e}")


def pod_templates(obj):
    """(group name, count, template) of every pod group of the object, in plan order."""
    spec = obj["spec"]
    if obj["kind"] == "JobSet":
        for rj in spec["replicatedJobs"]:
            js = rj["template"]["spec"]
            yield rj["name"], js["completions"], js["template"]
    elif obj["kind"] == "Job":
        for t in spec["tasks"]:
            yield t["name"], t["replicas"], t["template"]
    else:
        reps = spec.get("tfReplicaSpecs") or spec["pytorchReplicaSpecs"]
        order = ["Master", "Worker", "PS"]
        for name in sorted(reps, key=order.index):
            yield name.lower(), reps[name]["replicas"], reps[name]["template"]


def check_object(obj, schemas, placed, command):
    kind = obj.get("kind")
    if kind not in KIND_SCHEMA:
        raise Bad(f"kind {kind!r} is none of {sorted(KIND_SCHEMA)}")
    try:
        jsonschema.Draft7Validator(schemas[KIND_SCHEMA[kind]]).validate(obj)
    except jsonschema.ValidationError as e:
        raise Bad(f"{kind} schema: {'/'.join(map(str, e.absolute_path))}: {e.message}")
    check_model(obj["metadata"], "V1ObjectMeta", "metadata")
    name = obj["metadata"]["name"]
    plan = obj["metadata"]["annotations"]["strata.io/plan"]
    kubeflow = kind in ("TFJob", "PyTorchJob")
    if kind == "JobSet":
        for rj in obj["spec"]["replicatedJobs"]:
            js = rj["template"]["spec"]
            check_model(js, "V1JobSpec", f"replicatedJobs[{rj['name']}].template.spec")
            if js.get("completionMode") != "Indexed" or js["completions"] != js["parallelism"]:
                raise Bad(f"replicatedJobs[{rj['name']}]: not an Indexed Job with "
                          "completions = parallelism")
    next_index, total = 0, 0
    for group, count, tpl in pod_templates(obj):
        where = f"{kind} {name} group {group}"
        check_model(tpl, "V1PodTemplateSpec", where)
        labels, ann = tpl["metadata"]["labels"], tpl["metadata"]["annotations"]
        role = labels.get("strata.io/role")
        want = CONTRACT_LABELS - ({"strata.io/stage"} if role == "ps" else set())
        if set(labels) != want or role not in ("worker", "ps"):
            raise Bad(f"{where}: labels {sorted(labels)}, want {sorted(want)}")
        if labels["strata.io/job"] != name or labels["strata.io/group"] != group:
            raise Bad(f"{where}: strata.io/job or strata.io/group do not name the job and group")
        if ann.get("strata.io/plan") != plan or "strata.io/zone" not in ann:
            raise Bad(f"{where}: strata.io/plan or strata.io/zone missing")
        if (role == "worker") != ("strata.io/layers" in ann):
            raise Bad(f"{where}: strata.io/layers must be on worker groups only")
        if int(ann["strata.io/index-base"]) != next_index:
            raise Bad(f"{where}: index-base {ann['strata.io/index-base']}, want {next_index}")
        if placed:
            nodes = ann.get("strata.io/nodes", "").split(",")
            if len(nodes) != count or not all(nodes):
                raise Bad(f"{where}: strata.io/nodes names {len(nodes)} nodes for {count} tasks")
            if not ann["strata.io/zone"] and not kubeflow:
                raise Bad(f"{where}: placed, but strata.io/zone is empty")
        elif "strata.io/nodes" in ann:
            raise Bad(f"{where}: strata.io/nodes without a placement")
        next_index += count
        total += count
        pod = tpl["spec"]
        c = pod["containers"][0]
        if c["image"] != IMAGE or c["command"][-len(command):] != command:
            raise Bad(f"{where}: image or command not the ones given")
        res = c.get("resources", {})
        if role == "worker" and not (res.get("limits", {}).get("nvidia.com/gpu") == "1" or
                                     {"cpu", "memory"} <= set(res.get("requests", {}))):
            raise Bad(f"{where}: a worker requests neither a GPU nor cpu and memory")
        if role == "worker" and not pod["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]:
            raise Bad(f"{where}: a worker has no required node affinity on its type")
        env = {e["name"]: e["value"] for e in c["env"]}
        if not kubeflow and (c["command"][0] != "/bin/sh" or
                             env["STRATA_INDEX_BASE"] != ann["strata.io/index-base"]):
            raise Bad(f"{where}: no /bin/sh wrapper or STRATA_INDEX_BASE != index-base")
        if kind != "Job" and pod.get("schedulerName") != "strata-scheduler":
            raise Bad(f"{where}: schedulerName is not strata-scheduler")
    if kind == "Job" and obj["spec"]["minAvailable"] != total:
        raise Bad(f"Volcano Job {name}: minAvailable {obj['spec']['minAvailable']}, {total} tasks")
    return total


def self_check(schemas, good, placed, command):
    """The checkers must refuse broken copies of a good object."""
    breaks = [
        ("a misspelt container field", lambda o: o["spec"]["replicatedJobs"][0]["template"]["spec"]
         ["template"]["spec"]["containers"][0].__setitem__("imagePullPolice", "Always")),
        ("a JobSet spec field that does not exist", lambda o: o["spec"].__setitem__("replicas", 2)),
        ("a replica count as a string", lambda o: o["spec"]["replicatedJobs"][0]["template"]
         ["spec"].__setitem__("completions", "2")),
        ("a missing strata.io/type label", lambda o: o["spec"]["replicatedJobs"][0]["template"]
         ["spec"]["template"]["metadata"]["labels"].pop("strata.io/type")),
        ("a shifted index-base", lambda o: o["spec"]["replicatedJobs"][-1]["template"]["spec"]
         ["template"]["metadata"]["annotations"].__setitem__("strata.io/index-base", "0")),
    ]
    for what, brk in breaks:
        o = copy.deepcopy(good)
        brk(o)
        try:
            check_object(o, schemas, placed, command)
        except Bad:
            continue
        raise Bad(f"self-check: the checks accept {what}")


def main():
    strata, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    os.chdir(SRC)
    schemas = {}
    for f in KIND_SCHEMA.values():
        with open(os.path.join(SCHEMAS, f + ".schema.json")) as fh:
            schemas[f] = json.load(fh)
    configs = [("default", "configs/default.yaml")]
    for cluster in ("aws-mixed", "onprem-small"):
        for m in sorted(os.listdir("configs/models")):
            path = os.path.join(tmp, f"{cluster}-{m}")
            with open(path, "w") as fh:
                fh.write("model: v1\nobjective: cost\ninclude: [%s, %s]\n" % (
                    os.path.join(SRC, "configs/clusters", cluster + ".yaml"),
                    os.path.join(SRC, "configs/models", m)))
            configs.append((f"{cluster}/{m[:-5]}", path))
    command = ["python3", "/app/train.py", "--epochs", "3"]
    failures, checked, mixed_seen, homo_seen, refused = [], 0, 0, 0, 0
    first = True
    for label, cfg in configs:
        methods = ["exact", "homogeneous"] + (["greedy"] if label == "default" else [])
        for method in methods:
            for kind, placed in COMBOS:
                fw = "pytorch" if (kind == "pytorchjob" or (kind == "volcano" and placed)) \
                    else "tensorflow"
                args = [strata, "manifest", cfg, "--method", method, "--kind", kind,
                        "--framework", fw, "--image", IMAGE]
                if placed:
                    args += ["--placement", "zone"]
                args += ["--command"] + command
                r = subprocess.run(args, capture_output=True, text=True, timeout=120)
                case = f"{label} --method {method} --kind {kind} --framework {fw}" + \
                    (" --placement zone" if placed else "")
                if r.returncode == 1 and "plan method" in r.stderr:
                    continue  # no feasible plan by this method: nothing to write
                if kind in ("tfjob", "pytorchjob") and r.returncode == 2 and \
                        "mixes types" in r.stderr:
                    refused += 1
                    continue
                if r.returncode != 0:
                    failures.append(f"{case}: exit {r.returncode}: {r.stderr.strip()}")
                    continue
                try:
                    obj = yaml.safe_load(r.stdout)
                    check_object(obj, schemas, placed, command)
                    if first and obj["kind"] == "JobSet" and placed:
                        self_check(schemas, obj, placed, command)
                        first = False
                    checked += 1
                    if obj["kind"] in ("TFJob", "PyTorchJob"):
                        homo_seen += 1
                    elif len({t["metadata"]["labels"]["strata.io/type"]
                              for _, _, t in pod_templates(obj)
                              if t["metadata"]["labels"]["strata.io/role"] == "worker"}) > 1:
                        mixed_seen += 1
                except (Bad, yaml.YAMLError, KeyError, TypeError, IndexError) as e:
                    failures.append(f"{case}: {type(e).__name__}: {e}")
    for f in failures:
        print("FAIL", f)
    print(f"manifest_schema: {checked} manifests checked ({mixed_seen} of mixed plans, "
          f"{homo_seen} TFJob/PyTorchJob), {refused} tfjob/pytorchjob refusals of mixed plans, "
          f"self-check {'done' if not first else 'NOT RUN'}, {len(failures)} failures")
    ok = not failures and not first and mixed_seen > 0 and homo_seen > 0 and refused > 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
