#!/usr/bin/env python3
"""kube_nodes.py -- realistic `kubectl get nodes -o json` lists for tests.

Builds Node objects with Debian's python3-kubernetes client models and
serialises them exactly as the client does (ApiClient().
sanitize_for_serialization), for three clusters:

  eks.json      EKS: 2 r5n.24xlarge (us-east-1a, b), 1 p4d.24xlarge (a),
                2 g4dn.12xlarge (a, b); labels node.kubernetes.io/instance-type,
                topology.kubernetes.io/zone, GPU operator's nvidia.com/gpu.product
  gke.json      GKE: 2 n1-standard-8 with nvidia-tesla-t4 x1 (us-central1-a, b),
                1 a2-highgpu-8g (a), 1 n1-standard-96 CPU node (b); legacy
                beta.kubernetes.io/instance-type and failure-domain zone labels
                on the n1-standard-96
  kubeadm.json  kubeadm on premises: no cloud labels, no zones; 2 DGX-like
                nodes labelled nvidia.com/gpu.product=A100-SXM4-40GB by GPU
                feature discovery, 1 Tesla-T4 node, a control-plane node with
                no GPU and no instance type (left out: strata cannot type it)

tests/test_import.c checks the exact units, zones and types strata makes of
each. Usage: kube_nodes.py OUTDIR
"""
import json
import os
import sys

from kubernetes.client import (ApiClient, V1NodeList, V1Node, V1ObjectMeta, V1NodeSpec,
                               V1NodeStatus, V1NodeAddress, V1NodeSystemInfo, V1Taint,
                               V1ListMeta)


def node(name, labels, cpu, mem, gpus=None, taints=None):
    alloc = {"cpu": cpu, "memory": mem, "pods": "110", "ephemeral-storage": "95491281146"}
    cap = {"cpu": str(int(-(-float(cpu.rstrip("m")) // (1000 if cpu.endswith("m") else 1)))),
           "memory": mem, "pods": "110"}
    if gpus is not None:
        alloc["nvidia.com/gpu"] = str(gpus)
        cap["nvidia.com/gpu"] = str(gpus)
    labels = dict({"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                   "kubernetes.io/arch": "amd64"}, **labels)
    return V1Node(
        api_version="v1", kind="Node",
        metadata=V1ObjectMeta(name=name, labels=labels, uid="00000000-0000-0000-0000-" +
                              ("%012d" % (abs(hash(name)) % 10**12)),
                              resource_version="4242", creation_timestamp="2024-03-01T10:00:00Z"),
        spec=V1NodeSpec(provider_id="aws:///" + name, taints=taints),
        status=V1NodeStatus(
            allocatable=alloc, capacity=cap,
            addresses=[V1NodeAddress(type="InternalIP", address="10.0.0.1"),
                       V1NodeAddress(type="Hostname", address=name)],
            node_info=V1NodeSystemInfo(architecture="amd64", boot_id="b", container_runtime_version="containerd://1.7.2",
                                       kernel_version="5.10.0", kube_proxy_version="v1.28.5",
                                       kubelet_version="v1.28.5", machine_id="m", operating_system="linux",
                                       os_image="Amazon Linux 2", system_uuid="u")))


def eks():
    def lab(it, zone, gpu=None):
        l = {"node.kubernetes.io/instance-type": it, "beta.kubernetes.io/instance-type": it,
             "topology.kubernetes.io/zone": zone, "topology.kubernetes.io/region": "us-east-1",
             "failure-domain.beta.kubernetes.io/zone": zone,
             "eks.amazonaws.com/nodegroup": it.split(".")[0]}
        if gpu:
            l["nvidia.com/gpu.product"] = gpu
            l["nvidia.com/gpu.count"] = "8"
        return l
    return [
        node("ip-10-0-1-10.ec2.internal", lab("r5n.24xlarge", "us-east-1a"), "95690m", "781211084Ki"),
        node("ip-10-0-2-11.ec2.internal", lab("r5n.24xlarge", "us-east-1b"), "95690m", "781211084Ki"),
        node("ip-10-0-1-20.ec2.internal", lab("p4d.24xlarge", "us-east-1a", "NVIDIA-A100-SXM4-40GB"),
             "95690m", "1176826588Ki", gpus=8,
             taints=[V1Taint(key="nvidia.com/gpu", value="true", effect="NoSchedule")]),
        node("ip-10-0-1-30.ec2.internal", lab("g4dn.12xlarge", "us-east-1a", "Tesla-T4"),
             "47810m", "193016712Ki", gpus=4),
        node("ip-10-0-2-31.ec2.internal", lab("g4dn.12xlarge", "us-east-1b", "Tesla-T4"),
             "47810m", "193016712Ki", gpus=4),
    ]


def gke():
    def lab(it, zone, acc=None, legacy=False):
        l = {"cloud.google.com/gke-nodepool": "pool-" + it, "cloud.google.com/machine-family": it.split("-")[0]}
        if legacy:
            l["beta.kubernetes.io/instance-type"] = it
            l["failure-domain.beta.kubernetes.io/zone"] = zone
        else:
            l["node.kubernetes.io/instance-type"] = it
            l["topology.kubernetes.io/zone"] = zone
        if acc:
            l["cloud.google.com/gke-accelerator"] = acc
        return l
    return [
        node("gke-prod-t4-pool-1a2b3c4d-x9k2", lab("n1-standard-8", "us-central1-a", "nvidia-tesla-t4"),
             "7910m", "26130184Ki", gpus=1),
        node("gke-prod-t4-pool-1a2b3c4d-p0q7", lab("n1-standard-8", "us-central1-b", "nvidia-tesla-t4"),
             "7910m", "26130184Ki", gpus=1),
        node("gke-prod-a100-pool-5e6f7a8b-m3n4", lab("a2-highgpu-8g", "us-central1-a", "nvidia-tesla-a100"),
             "95690m", "1317213440Ki", gpus=8),
        node("gke-prod-cpu-pool-9c0d1e2f-r5s6", lab("n1-standard-96", "us-central1-b", legacy=True),
             "95.69", "350000Mi"),
    ]


def kubeadm():
    def lab(prod=None):
        l = {}
        if prod:
            l.update({"nvidia.com/gpu.product": prod, "nvidia.com/gpu.present": "true",
                      "feature.node.kubernetes.io/pci-10de.present": "true"})
        return l
    return [
        node("dgx-01", lab("A100-SXM4-40GB"), "255", "1056410564Ki", gpus=8),
        node("dgx-02", lab("A100-SXM4-40GB"), "255", "1056410564Ki", gpus=8),
        node("t4-node-1", lab("Tesla-T4"), "31500m", "131900000Ki", gpus=2),
    ]


def dump(path, nodes):
    lst = V1NodeList(api_version="v1", kind="List", items=nodes, metadata=V1ListMeta(resource_version=""))
    with open(path, "w") as f:
        json.dump(ApiClient().sanitize_for_serialization(lst), f, indent=4)
        f.write("\n")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    dump(os.path.join(out, "eks.json"), eks())
    dump(os.path.join(out, "gke.json"), gke())
    dump(os.path.join(out, "kubeadm.json"), kubeadm())
    # the control-plane node has neither an instance type nor a GPU product
    dump(os.path.join(out, "kubeadm-control-plane.json"),
         kubeadm() + [node("cp-1", {"node-role.kubernetes.io/control-plane": ""}, "3800m", "7900000Ki",
                           taints=[V1Taint(key="node-role.kubernetes.io/control-plane", effect="NoSchedule")])])


if __name__ == "__main__":
    main()
