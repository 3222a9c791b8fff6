package e2e

import (
	"encoding/json"
	"testing"
)

// Hybrid mode: the exported mutating policy runs in kube-apiserver before the webhook, which
// puts its own plan in place of the policy's floor. Every pod of the examples, the test data and
// the corpus is created (dry run) where only the webhook reaches, where only the floor reaches,
// and where both do. With both, the pod is the webhook's, plan annotation included, byte for
// byte; but where the webhook would leave the pod as written unpatched because it denies or skips
// it, and the floor gave it a /dev/shm: then it is the floor's, as if the webhook were down.
func TestHybridModeGivesTheWebhooksAnswerAndTheFloorOtherwise(t *testing.T) {
	applyPolicyMode(t, "e2e-hybrid", cp.ShmguardPolicy(), "shmguard.io/hybrid", "hybrid")
	pods := append(edgePodsOf(t), everyPod(t)...)
	webhook := newNamespaceNamed(t, "webhook", map[string]string{"shmguard.io/hybrid": "false"})
	floor := newNamespaceNamed(t, "floor", map[string]string{"shmguard.io/enabled": "false"})
	hybrid := newNamespaceNamed(t, "hybrid", nil)
	waitForPolicies(t, floor, pods[0])
	same, floored, refused := 0, 0, 0
	for i, u := range preparedPods(pods) {
		byWebhook, _, errWebhook := createObject(t, webhook, u, true)
		byFloor, _, errFloor := createObject(t, floor, u, true)
		byBoth, _, errBoth := createObject(t, hybrid, u, true)
		if errWebhook != nil || errBoth != nil || errFloor != nil {
			// Refused by the API server itself (a pod it finds invalid) or the webhook: all alike.
			if (errWebhook == nil) != (errBoth == nil) {
				t.Errorf("pod %d: the webhook alone says %v, with the floor %v\n%s", i, errWebhook, errBoth, compact(u.Object))
			}
			refused++
			continue
		}
		w, wPlan := normalised(byWebhook)
		f, fPlan := normalised(byFloor)
		b, bPlan := normalised(byBoth)
		switch {
		case b == w && bPlan == wPlan:
			same++
		case b == f && bPlan == fPlan && wPlan == "":
			floored++
		default:
			var x, y map[string]any
			_ = json.Unmarshal([]byte(w), &x)
			_ = json.Unmarshal([]byte(b), &y)
			t.Errorf("pod %d: with the floor it is neither the webhook's nor the floor's:\nwebhook: %v (plan %s)\n"+
				"hybrid:  %v (plan %s)\nfrom: %s", i, missingFrom(x, y, ""), wPlan, missingFrom(y, x, ""), bPlan, compact(u.Object))
		}
	}
	t.Logf("%d pods: %d the webhook's answer, %d kept the floor (the webhook left them unpatched), %d refused alike",
		len(pods), same, floored, refused)
	if same < len(pods)*3/4 {
		t.Errorf("only %d of %d pods got the webhook's answer", same, len(pods))
	}
}
