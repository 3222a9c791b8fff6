package fleet

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// A result of the baseline (no webhook: its latencies NaN) and of a storm that never finished
// is written, with null for what was not measured.
func TestResultJSON(t *testing.T) {
	r := Result{Storm: "jobset", Mode: None, Pods: 3, ExistSeconds: 1.5, RunningSeconds: math.NaN(),
		WebhookP50: math.NaN(), WebhookP99: math.NaN()}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"runningSeconds":null`, `"webhookP99":null`, `"existSeconds":1.5`, `"mode":"none"`, `"pods":3`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s: no %s", b, want)
		}
	}
	if strings.Contains(string(b), "faultNote") {
		t.Errorf("%s: an empty faultNote is left out", b)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || back.ExistSeconds != 1.5 || back.Pods != 3 ||
		!math.IsNaN(back.RunningSeconds) || !math.IsNaN(back.WebhookP99) {
		t.Errorf("read back: %+v, %v", back, err)
	}
}
