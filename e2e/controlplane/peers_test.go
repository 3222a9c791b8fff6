package controlplane

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// A Deployment as the peers' manifests write theirs: the process run on loopback has its first
// container's arguments, and its environment with the pod's own fields and $(VAR) resolved.
const peerManifest = `apiVersion: v1
kind: Namespace
metadata: {name: engine-system}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: other, namespace: engine-system}
spec:
  template:
    spec:
      containers:
      - name: other
        args: [--other]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: engine, namespace: engine-system}
spec:
  template:
    spec:
      containers:
      - name: manager
        args: ["--port=8443", "--operation=webhook", "--operation=mutation-webhook", "--v=2 "]
        env:
        - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: GOMEMLIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory}}}
        - {name: CONTAINER_NAME, value: manager}
        - {name: OTEL, value: "pod=$(POD_NAME),ns=$(POD_NAMESPACE),c=$(CONTAINER_NAME)"}
      - name: sidecar
        args: [--sidecar]
`

func TestDeploymentProcessIsTheFirstContainerAsTheKubeletRunsIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "install.yaml")
	if err := os.WriteFile(path, []byte(peerManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	objects, err := ReadManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(objects) != 3 {
		t.Fatalf("read %d objects, want 3", len(objects))
	}
	for _, c := range []struct {
		name, deployment string
		args, env        []string
		namespace, err   string
	}{
		{"the named Deployment's first container", "engine",
			[]string{"--port=8443", "--operation=webhook", "--operation=mutation-webhook", "--v=2"},
			[]string{"POD_NAMESPACE=engine-system", "POD_NAME=engine-local", "CONTAINER_NAME=manager",
				"OTEL=pod=engine-local,ns=engine-system,c=manager"}, "engine-system", ""},
		{"another Deployment", "other", []string{"--other"}, nil, "engine-system", ""},
		{"a Deployment the manifest lacks", "missing", nil, nil, "", "the manifest has no Deployment missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args, env, ns, err := deploymentProcess(objects, c.deployment)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(args, c.args) || !reflect.DeepEqual(env, c.env) || ns != c.namespace {
				t.Errorf("got args %q, env %q, namespace %q; want %q, %q, %q", args, env, ns, c.args, c.env, c.namespace)
			}
		})
	}
}

func TestPeerFlagsReplaceTheDeploymentsAndKeepRepeatedOnes(t *testing.T) {
	args := replaceArgs([]string{"--port=8443", "--operation=webhook", "--operation=mutation-webhook", "--logtostderr"},
		peers[GatekeeperName].args(&State{Dir: "/d"}, 20001, 20002, 20003, "/d/gatekeeper"))
	want := []string{"--port=20001", "--operation=webhook", "--operation=mutation-webhook", "--logtostderr",
		"--cert-dir=/d/gatekeeper", "--disable-cert-rotation=true", "--health-addr=127.0.0.1:20002", "--host=127.0.0.1",
		"--metrics-addr=0", "--prometheus-port=20003"}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("got %q\nwant %q", args, want)
	}
}
