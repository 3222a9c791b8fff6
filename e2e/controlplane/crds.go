// The upstream CRDs, installed unmodified with a client Create (most are larger than the
// 256 KiB annotation client-side apply would write).
package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// preferredVersions chooses between files that define the same CRD: an API server holds one
// definition per name. Both kubeflow/trainer v1.9 (MPIJob v1) and kubeflow/mpi-operator
// (MPIJob v2beta1) define mpijobs.kubeflow.org; v2beta1 is the one the MPI Operator serves today.
var preferredVersions = map[string]string{"mpijobs.kubeflow.org": "v2beta1"}

// ReadCRDs reads every CRD file in dir, one definition per CRD name.
func ReadCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(text, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s: a %q, not a CustomResourceDefinition", f, crd.Kind)
		}
		if old, ok := byName[crd.Name]; ok {
			want, ok := preferredVersions[crd.Name]
			if !ok {
				return nil, fmt.Errorf("%s: a second definition of %s, and none is preferred", f, crd.Name)
			}
			if !serves(crd, want) {
				continue
			}
			if serves(old, want) {
				return nil, fmt.Errorf("%s: two definitions of %s serve %s", f, crd.Name, want)
			}
		}
		byName[crd.Name] = crd
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, n := range names {
		out = append(out, byName[n])
	}
	return out, nil
}

func serves(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Served {
			return true
		}
	}
	return false
}

// installCRDs creates the CRDs of s.CRDDir and waits until each is Established.
func (s *State) installCRDs(ctx context.Context, logf func(string, ...any)) error {
	if s.CRDDir == "" {
		logf("no CRDs directory: only built-in kinds will be served")
		return nil
	}
	if _, err := os.Stat(s.CRDDir); err != nil {
		logf("CRDs not found at %s: only built-in kinds will be served", s.CRDDir)
		s.CRDDir = ""
		return nil
	}
	crds, err := ReadCRDs(s.CRDDir)
	if err != nil {
		return err
	}
	if len(crds) == 0 {
		logf("no CRDs in %s: only built-in kinds will be served", s.CRDDir)
		s.CRDDir = ""
		return nil
	}
	cfg, err := s.RestConfig()
	if err != nil {
		return err
	}
	if err := CreateCRDs(ctx, cfg, crds); err != nil {
		return err
	}
	logf("%d CRDs Established: %s", len(crds), crdNames(crds))
	return nil
}

// CreateCRDs creates crds (those already there are left as they are) and waits until each is
// Established.
func CreateCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 2 * time.Minute // the argo CRDs are over 1 MB each
	client, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		if _, err := api.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s: %w", crd.Name, err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, crd := range crds {
		for {
			got, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err == nil && established(got) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s is not Established after 2 minutes (%v)", crd.Name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

func crdNames(crds []*apiextensionsv1.CustomResourceDefinition) string {
	names := make([]string, len(crds))
	for i, c := range crds {
		names[i] = c.Spec.Names.Plural + "." + c.Spec.Group
	}
	return strings.Join(names, ", ")
}
