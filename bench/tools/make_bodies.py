#!/usr/bin/env python3
"""Generates the benchmark inputs in OUT_DIR:

  pod-10k.json   AdmissionReview of a realistic 4-GPU torchrun Pod as the API server sends it
                 (env vars, a sidecar and an init container, the kube-api-access projected
                 volume, managedFields): about 10 KB
  pod-200k.json  the same Pod grown to about 200 KB (many containers and env vars)
  jobset.json    AdmissionReview of a 2-replicated-job JobSet
  audit-N.yaml   N Pods/JobSets (alternating) as one multi-document YAML stream, N in 1k/10k/100k
  audit-N.json   the same objects as one kind: List JSON

Usage: make_bodies.py OUT_DIR [--audit]
"""
import copy
import json
import os
import sys
import uuid

def env(n, prefix="VAR"):
    return [{"name": "%s_%03d" % (prefix, i), "value": "value-%d-%s" % (i, "x" * 20)} for i in range(n)]

def managed_fields():
    return [{
        "manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1",
        "time": "2026-11-22T07:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:shmguard.io/num-workers": {},
                                                       "f:shmguard.io/batch-bytes": {}},
                                    "f:labels": {".": {}, "f:app": {}, "f:team": {}}},
                     "f:spec": {"f:containers": {'k:{"name":"trainer"}': {
                         ".": {}, "f:command": {}, "f:env": {".": {}}, "f:image": {},
                         "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {".": {}, "f:limits": {}},
                         "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
                         "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {},
                         "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}}}}]

def container(name, gpus, n_env, command):
    c = {
        "name": name, "image": "nvcr.io/nvidia/pytorch:24.08-py3", "command": command,
        "env": [{"name": "PET_NPROC_PER_NODE", "value": str(gpus or 1)},
                {"name": "NCCL_DEBUG", "value": "WARN"},
                {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}]
               + env(n_env),
        "resources": {"limits": {"cpu": "32", "memory": "256Gi"}, "requests": {"cpu": "30", "memory": "240Gi"}},
        "volumeMounts": [{"name": "data", "mountPath": "/data"},
                         {"name": "kube-api-access-x7k2p", "readOnly": True,
                          "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }
    if gpus:
        c["resources"]["limits"]["nvidia.com/gpu"] = str(gpus)
    return c

def pod(n_containers=2, n_env=12):
    containers = [container("trainer", 4, n_env, ["torchrun", "--nproc_per_node=4", "train.py", "--epochs=90"])]
    for i in range(1, n_containers):
        containers.append(container("sidecar-%d" % i, 0, n_env, ["/bin/metrics-agent", "--port=9%03d" % i]))
    return {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {
            "generateName": "resnet-train-", "namespace": "ml-vision",
            "creationTimestamp": None,
            "labels": {"app": "resnet", "team": "vision", "batch.kubernetes.io/job-name": "resnet-train"},
            "annotations": {"shmguard.io/num-workers": "8", "shmguard.io/batch-bytes": "160Mi"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "resnet-train",
                                 "uid": str(uuid.UUID(int=1)), "controller": True, "blockOwnerDeletion": True}],
            "managedFields": managed_fields(),
        },
        "spec": {
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "imagenet"}},
                {"name": "kube-api-access-x7k2p", "projected": {"sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                        "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}], "defaultMode": 420}}],
            "initContainers": [{"name": "fetch-data", "image": "busybox:1.36", "command": ["sh", "-c", "true"],
                                "resources": {"limits": {"memory": "1Gi"}}}],
            "containers": containers,
            "restartPolicy": "Never", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default", "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300},
                            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {},
    }

def jobset():
    tmpl = pod()["spec"]
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "llama-pretrain", "namespace": "train-llm",
                     "annotations": {"shmguard.io/num-workers": "6", "shmguard.io/batch-bytes": "96Mi"}},
        "spec": {"replicatedJobs": [
            {"name": "driver", "replicas": 1, "template": {"spec": {"template": {"spec": copy.deepcopy(tmpl)}}}},
            {"name": "workers", "replicas": 4, "template": {"spec": {"parallelism": 2, "completions": 2,
                                                                     "template": {"spec": copy.deepcopy(tmpl)}}}}]},
    }

def review(obj, kind):
    group, version = ("jobset.x-k8s.io", "v1alpha2") if kind == "JobSet" else ("", "v1")
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {
        "uid": "0df28fbd-5f5f-11e8-8e56-42010a800002",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": {"group": group, "version": version, "resource": kind.lower() + "s"},
        "namespace": obj["metadata"]["namespace"], "operation": "CREATE",
        "userInfo": {"username": "system:serviceaccount:kube-system:job-controller",
                     "uid": str(uuid.UUID(int=2)),
                     "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]},
        "object": obj, "oldObject": None, "dryRun": False,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}}}

def sized(target, n_containers):
    lo, hi = 1, 2000
    while lo < hi:  # the smallest env count reaching the target size
        mid = (lo + hi) // 2
        if len(json.dumps(review(pod(n_containers, mid), "Pod"), separators=(",", ":"))) >= target:
            hi = mid
        else:
            lo = mid + 1
    return review(pod(n_containers, lo), "Pod")

def yaml_dump(obj):
    import yaml
    return yaml.safe_dump(obj, sort_keys=False)

def main():
    out = sys.argv[1]
    if "--stream-mb" in sys.argv:
        mb = int(sys.argv[sys.argv.index("--stream-mb") + 1])
        os.makedirs(out, exist_ok=True)
        stream_of_size(os.path.join(out, "audit-%dmb.yaml" % mb), mb)
        return
    os.makedirs(out, exist_ok=True)
    bodies = {"pod-10k.json": sized(10_000, 2), "pod-200k.json": sized(200_000, 24),
              "jobset.json": review(jobset(), "JobSet")}
    for name, body in bodies.items():
        with open(os.path.join(out, name), "w") as f:
            json.dump(body, f, separators=(",", ":"))
    if "--audit" in sys.argv:
        p, j = pod(), jobset()
        doc_p, doc_j = yaml_dump(p), yaml_dump(j)
        for n in (1_000, 10_000, 100_000):
            with open(os.path.join(out, "audit-%d.yaml" % n), "w") as f:
                for i in range(n):
                    f.write("---\n")
                    f.write(doc_p if i % 2 == 0 else doc_j)
            items = [p if i % 2 == 0 else j for i in range(n)]
            with open(os.path.join(out, "audit-%d.json" % n), "w") as f:
                json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)

def stream_of_size(path, megabytes):
    """A YAML stream of pods and JobSets, alternating, of at least `megabytes` MB."""
    docs = [yaml_dump(pod()), yaml_dump(jobset())]
    size, i = 0, 0
    with open(path, "w") as f:
        while size < megabytes * 1_000_000:
            f.write("---\n" + docs[i % 2])
            size += 4 + len(docs[i % 2])
            i += 1

if __name__ == "__main__":
    main()
