package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"shmguard.io/e2e/controlplane"
)

// KServe's CRDs of the kinds shmguard reads; the control plane does not install them (they sit
// in SHMGUARD_CRD_DIR/inference), so the tests that use them do, once per run.
var (
	kserveOnce sync.Once
	kserveErr  error
)

// requireKServeCRDs installs the InferenceService, ServingRuntime, ClusterServingRuntime,
// LLMInferenceService and LLMInferenceServiceConfig CRDs, or skips the test, saying why, when
// they are not there.
func requireKServeCRDs(t *testing.T) {
	t.Helper()
	requireCRDs(t)
	if missing := installKServeCRDs(t); missing != "" {
		if os.Getenv("SHMGUARD_REQUIRE_SHARED") == "1" {
			t.Fatal("SHMGUARD_REQUIRE_SHARED=1: " + missing)
		}
		t.Skip(missing)
	}
}

// installKServeCRDs installs KServe's CRDs once per run; when they are not there, it says so.
func installKServeCRDs(t *testing.T) (missing string) {
	t.Helper()
	dir := filepath.Join(cp.CRDDir, "inference")
	if _, err := os.Stat(dir); cp.CRDDir == "" || err != nil {
		return "SKIPPED: KServe's CRDs are not at " + dir
	}
	kserveOnce.Do(func() {
		var crds []*apiextensionsv1.CustomResourceDefinition
		for _, resource := range []string{"inferenceservices", "servingruntimes", "clusterservingruntimes", "llminferenceservices",
			"llminferenceserviceconfigs"} {
			file := filepath.Join(dir, "serving.kserve.io_"+resource+".yaml")
			text, err := os.ReadFile(file)
			if err != nil {
				kserveErr = err
				return
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(text, crd); err != nil {
				kserveErr = fmt.Errorf("%s: %w", file, err)
				return
			}
			crds = append(crds, crd)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if kserveErr = controlplane.CreateCRDs(ctx, mustRestConfig(t), crds); kserveErr != nil {
			return
		}
		// The API server serves them once discovery lists them; the mapper then learns them.
		for _, crd := range crds {
			gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
			for {
				if r, ok := mapper.(meta.ResettableRESTMapper); ok {
					r.Reset()
				}
				if _, err := mapper.RESTMapping(gk, crd.Spec.Versions[0].Name); err == nil {
					break
				} else if ctx.Err() != nil {
					kserveErr = fmt.Errorf("%s is not served: %w", gk, err)
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	})
	if kserveErr != nil {
		t.Fatalf("installing KServe's CRDs: %v", kserveErr)
	}
	return ""
}

// A KServe ServingRuntime and an InferenceService that selects it, created through the API
// server, are judged and left as they are; the Deployment KServe makes from them is patched, and
// its pods get the size the audit of the two objects gives, which is the size `shmguard plan
// --server vllm` computes for the same launch.
func TestKServeServingIsSizedWhenItsPodsAreCreated(t *testing.T) {
	requireKServeCRDs(t)
	const (
		runtimeFile   = "testdata/inference/kserve-vllm-runtime.yaml"
		isvcFile      = "testdata/inference/kserve-vllm-isvc.yaml"
		predictorFile = "testdata/inference/kserve-vllm-predictor.yaml"
	)
	planned := serverPlan(t, "--server", "vllm", "--tp", "4", "--gpus", "4", "--memory-limit", "128Gi")
	// The audit of the runtime and the InferenceService together: the predictor as KServe builds
	// it, needing more than the runtime's 1Gi.
	var isvc *auditRecord
	records := audit(t, nil, runtimeFile, isvcFile)
	for i := range records {
		if records[i].Kind == "InferenceService" {
			isvc = &records[i]
		}
	}
	if isvc == nil {
		t.Fatalf("no InferenceService in the audit of %s and %s: %+v", runtimeFile, isvcFile, records)
	}
	if isvc.Required != planned.RequiredBytes || !strings.Contains(isvc.first("serving-runtime"), "ServingRuntime vllm-runtime") {
		t.Fatalf("the audit of the InferenceService with its runtime needs %d bytes (%q): want %s (%d) from ServingRuntime vllm-runtime",
			isvc.Required, isvc.first("serving-runtime"), planned.Required, planned.RequiredBytes)
	}
	if !strings.Contains(isvc.first("shm-patched-at-creation"), "below the "+planned.Required) {
		t.Errorf("the audit does not say the runtime's 1Gi is below the %s needed: %q", planned.Required, isvc.first("shm-patched-at-creation"))
	}

	ns := newNamespace(t, nil)
	for _, file := range []string{runtimeFile, isvcFile} {
		stored, warns := createFile(t, ns, file)
		if strings.Contains(jsonText(stored.Object), "shmguard.io/plan") {
			t.Errorf("%s was patched: the webhooks only validate KServe's kinds", file)
		}
		if len(warns) > 0 {
			t.Errorf("%s: warnings for what audit finds nothing wrong with: %q", file, warns)
		}
	}
	// What KServe would create: the webhooks patch its template, and its pods carry the size.
	stored, _ := createFile(t, ns, predictorFile)
	expectServerSized(t, ns, stored, "serving.kserve.io/inferenceservice=qwen", "vllm", planned.Required)
}
