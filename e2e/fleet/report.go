package fleet

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Table is the results as a Markdown table, one row per storm, mode and fault (rounds of the same
// one aggregated: the worst of each goal, the median of each time).
func Table(results []*Result) string {
	type key struct{ storm, mode, fault string }
	groups := map[key][]*Result{}
	var order []key
	for _, r := range results {
		k := key{r.Storm, string(r.Mode), r.Fault}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var b strings.Builder
	b.WriteString("| storm | mode | fault | rounds | pods | all exist (s) | all Running (s) | create p50 / p99 (ms) | webhook calls, p50 / p99 (ms) | admit p99 (ms) | rejected / failed open | creates failed | replica CPU (s) / peak (MiB) | without their /dev/shm |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range order {
		g := groups[k]
		median := func(f func(*Result) float64) float64 {
			var v []float64
			for _, r := range g {
				v = append(v, f(r))
			}
			sort.Float64s(v)
			return v[len(v)/2]
		}
		worst := func(f func(*Result) float64) float64 {
			m := 0.0
			for _, r := range g {
				if x := f(r); x > m || math.IsNaN(x) {
					m = x
				}
			}
			return m
		}
		cpu, peak := 0.0, 0.0
		for _, r := range g {
			for _, rep := range r.Replicas {
				cpu = math.Max(cpu, rep.CPUSeconds)
				peak = math.Max(peak, rep.PeakMiB)
			}
		}
		fault := k.fault
		if fault == "" {
			fault = "-"
		}
		calls := "-"
		if c := median(func(r *Result) float64 { return r.WebhookCalls }); c > 0 {
			calls = fmt.Sprintf("%.0f, %s / %s", c, ms(median(func(r *Result) float64 { return r.WebhookP50 })),
				ms(worst(func(r *Result) float64 { return r.WebhookP99 })))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %s | %s | %s / %s | %s | %s | %.0f / %.0f | %.0f | %.2f / %.0f | %.0f (want %s) |\n",
			k.storm, k.mode, fault, len(g), g[0].Pods,
			secs(median(func(r *Result) float64 { return r.ExistSeconds })),
			secs(worst(func(r *Result) float64 { return r.RunningSeconds })),
			ms(median(func(r *Result) float64 { return r.CreateP50 })), ms(worst(func(r *Result) float64 { return r.CreateP99 })),
			calls, ms(worst(func(r *Result) float64 { return r.AdmitP99 })),
			worst(func(r *Result) float64 { return r.Rejections }), worst(func(r *Result) float64 { return r.FailOpen }),
			worst(func(r *Result) float64 { return r.FailedCreates }), cpu, peak,
			worst(func(r *Result) float64 { return float64(r.WithoutShm) }), wantOf(g[0]))
	}
	return b.String()
}

func wantOf(r *Result) string {
	if r.Want == "" {
		return "none"
	}
	return r.Want
}

func secs(v float64) string {
	if math.IsNaN(v) {
		return "not all"
	}
	return fmt.Sprintf("%.1f", v)
}

func ms(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.0f", v*1000)
}

// PlotCreates draws pods created per second over time, one line per result, to a PNG file.
func PlotCreates(results []*Result, title, path string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds since the storm started"
	p.Y.Label.Text = "pods created per second (5 s window)"
	p.Legend.Top = true
	palette := []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	}
	for i, r := range results {
		pts := plotter.XYs{}
		for j, pt := range r.Timeline {
			k := j
			for k > 0 && pt.T-r.Timeline[k-1].T < 5 {
				k--
			}
			if k == j {
				continue
			}
			dt := pt.T - r.Timeline[k].T
			pts = append(pts, plotter.XY{X: pt.T, Y: float64(pt.Exist-r.Timeline[k].Exist) / dt})
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = palette[i%len(palette)]
		line.Width = vg.Points(1.5)
		label := string(r.Mode)
		if r.Fault != "" {
			label += ", " + r.Fault
		}
		p.Add(line)
		p.Legend.Add(label, line)
	}
	return p.Save(9*vg.Inch, 4.5*vg.Inch, path)
}
