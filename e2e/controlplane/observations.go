// The webhook's access to the ShmProfiles (shmguard-webhook --observations), outside a pod: the chart's
// CRD, ServiceAccount and read-only RBAC applied to the API server as the chart renders them,
// and a token of that ServiceAccount in a file — so the webhook on loopback reads the profiles
// with exactly the rights an installed one has.
package controlplane

import (
	"context"
	"fmt"
	"os"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// webhookRoles are the chart's ClusterRoles (and bindings) of the webhook's own API access:
// the ShmProfiles (observations) and the resource claims (resourceClaims).
var webhookRoles = map[string]bool{"shmguard-observations": true, "shmguard-resource-claims": true}

// ObservationsToken is the file of the webhook's ServiceAccount token.
func (s *State) ObservationsToken() string { return s.Path("shmguard", "token") }

// prepareObservations applies the chart's ShmProfile CRD, the webhook's ServiceAccount and its
// ClusterRole and binding from `docs` (a render of the chart), and writes a token of that
// ServiceAccount. It returns the flags that point the webhook at this API server.
func (s *State) prepareObservations(ctx context.Context, docs [][]byte) ([]string, error) {
	cfg, err := s.RestConfig()
	if err != nil {
		return nil, err
	}
	cs, err := s.Clientset()
	if err != nil {
		return nil, err
	}
	ext, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ReleaseNamespace}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	var sa string
	var crd string
	for _, doc := range docs {
		var err error
		switch kindOf(doc) {
		case "CustomResourceDefinition":
			var o apiextensionsv1.CustomResourceDefinition
			if err = yaml.UnmarshalStrict(doc, &o); err == nil {
				crd = o.Name
				_, err = ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &o, metav1.CreateOptions{})
			}
		case "ServiceAccount":
			var o corev1.ServiceAccount
			if err = yaml.UnmarshalStrict(doc, &o); err == nil && o.Namespace == "" {
				sa = o.Name
				_, err = cs.CoreV1().ServiceAccounts(ReleaseNamespace).Create(ctx, &o, metav1.CreateOptions{})
			}
		case "ClusterRole":
			var o rbacv1.ClusterRole
			if err = yaml.UnmarshalStrict(doc, &o); err == nil && webhookRoles[o.Name] {
				_, err = cs.RbacV1().ClusterRoles().Create(ctx, &o, metav1.CreateOptions{})
			}
		case "ClusterRoleBinding":
			var o rbacv1.ClusterRoleBinding
			if err = yaml.UnmarshalStrict(doc, &o); err == nil && webhookRoles[o.Name] {
				_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &o, metav1.CreateOptions{})
			}
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("the chart's %s: %w", kindOf(doc), err)
		}
	}
	if sa == "" || crd == "" {
		return nil, fmt.Errorf("the chart renders no webhook ServiceAccount or no ShmProfile CRD")
	}
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd, metav1.GetOptions{})
		if err == nil && established(got) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s is not Established after a minute (%v)", crd, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ReleaseNamespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](48 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(s.ObservationsToken(), []byte(tr.Status.Token), 0o600); err != nil {
		return nil, err
	}
	return []string{"--api-server=" + s.APIServerURL(), "--api-ca-file=" + s.ClusterCA(),
		"--api-token-file=" + s.ObservationsToken()}, nil
}
