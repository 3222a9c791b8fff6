package fleet

import (
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Each mode counts its own webhooks' calls in the API server's metrics and no other's: the names
// are the ones the API server reported for shmguard's chart and the peers' policies in
// bench/peers.sh's runs.
func TestEachModeCountsItsOwnWebhooks(t *testing.T) {
	names := map[string]float64{
		"mutate.shmguard.io": 1, "mutate-baseline.shmguard.io": 2,
		"mpol.validate.kyverno.svc-fail-finegrained-dshm-for-gpu-pods": 4,
		"mutation.gatekeeper.sh": 8,
	}
	var text strings.Builder
	text.WriteString("# TYPE apiserver_admission_webhook_fail_open_count counter\n")
	for name, v := range names {
		text.WriteString(`apiserver_admission_webhook_fail_open_count{name="` + name + `",type="admit"} `)
		text.WriteString(strconv.FormatFloat(v, 'f', -1, 64) + "\n")
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text.String()))
	if err != nil {
		t.Fatal(err)
	}
	s := Scrape(families)
	for _, c := range []struct {
		mode Mode
		want float64
	}{
		{Webhook, 3}, {Hybrid, 3}, {Kyverno, 4}, {Gatekeeper, 8},
	} {
		t.Run(string(c.mode), func(t *testing.T) {
			got := s.Counter("apiserver_admission_webhook_fail_open_count", map[string]string{"name": c.mode.webhooks()})
			if got != c.want {
				t.Errorf("%s's fail-opens: %v, want %v", c.mode, got, c.want)
			}
		})
	}
}
