#!/usr/bin/env python3
"""Wraps the workloads of a manifest file in admission.k8s.io/v1 AdmissionReview requests.

Usage: make-review.py FILE [OPERATION]  -> one JSON AdmissionReview per line, as the API server
would send them for Pods and JobSets (other kinds are skipped).
"""
import json
import sys
import uuid

import yaml

KINDS = {"Pod": ("", "v1", "pods"), "JobSet": ("jobset.x-k8s.io", "v1alpha2", "jobsets")}

def main():
    path = sys.argv[1]
    operation = sys.argv[2] if len(sys.argv) > 2 else "CREATE"
    with open(path) as f:
        for obj in yaml.safe_load_all(f):
            if not isinstance(obj, dict) or obj.get("kind") not in KINDS:
                continue
            group, version, resource = KINDS[obj["kind"]]
            meta = obj.get("metadata", {})
            print(json.dumps({
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "request": {
                    "uid": str(uuid.uuid4()),
                    "kind": {"group": group, "version": version, "kind": obj["kind"]},
                    "resource": {"group": group, "version": version, "resource": resource},
                    "namespace": meta.get("namespace", "default"),
                    "name": meta.get("name", ""),
                    "operation": operation,
                    "userInfo": {"username": "demo"},
                    "object": obj,
                    "dryRun": False,
                },
            }))

if __name__ == "__main__":
    main()
