#!/usr/bin/env python3
"""Prints a webhook's AdmissionReview response for people: the decision, warnings, and the
request object with the returned JSON patch applied (python3-jsonpatch, an RFC 6902
implementation independent of shmguard's).

Usage: show-response.py REVIEW_JSON_FILE [NEXT_REVIEW_FILE] < RESPONSE_JSON
With NEXT_REVIEW_FILE, writes the review again with the patched object, as the API server
passes a mutated object on to the validating webhooks.
"""
import base64
import json
import sys

import jsonpatch
import yaml

def main():
    review = json.load(open(sys.argv[1]))
    response = json.load(sys.stdin)["response"]
    assert response["uid"] == review["request"]["uid"], "uid not echoed"
    status = response.get("status", {})
    decision = "allowed" if response["allowed"] else "DENIED (%s)" % status.get("code")
    print("  decision: %s" % decision)
    if status.get("message"):
        print("  message:  %s" % status["message"])
    for w in response.get("warnings", []):
        print("  warning:  %s" % w)
    patched = review["request"]["object"]
    if "patch" in response:
        patch = json.loads(base64.b64decode(response["patch"]))
        print("  patch:    %d operations (%s)" % (len(patch), response["patchType"]))
        patched = jsonpatch.apply_patch(patched, patch)
        print("  patched object:")
        for line in yaml.safe_dump(patched, sort_keys=False).splitlines():
            print("    " + line)
    if len(sys.argv) > 2:
        review["request"]["object"] = patched
        json.dump(review, open(sys.argv[2], "w"))

if __name__ == "__main__":
    main()
