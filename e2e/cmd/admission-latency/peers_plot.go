package main

// The peers' figures as JSON lines (--json, one per contender and load) and as one PNG of three
// panels over the load (--plot): the added p50, the contender's CPU per 1,000 creates and its
// peak resident memory, one line per contender, both axes logarithmic.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// peerPoint is one contender at one load.
type peerPoint struct {
	Users         int     `json:"users"`
	Contender     string  `json:"contender"`
	CreatesPerS   float64 `json:"createsPerSecond"`
	P50Ms         float64 `json:"p50Ms"`
	P99Ms         float64 `json:"p99Ms"`
	AddedP50Ms    float64 `json:"addedP50Ms"`
	CPUPer1000    float64 `json:"cpuSecondsPer1000"` // its process; 0 for none
	APICPUPer1000 float64 `json:"apiServerCpuSecondsPer1000"`
	OpensPer1000  float64 `json:"tcpOpensPer1000"`
	PeakRSSMiB    float64 `json:"peakRssMiB"` // 0 for none
	Errors        int     `json:"errors"`
}

// appendPoints adds points to the JSON lines file at path.
func appendPoints(path string, points []peerPoint) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, p := range points {
		if err := enc.Encode(p); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// readPoints reads a JSON lines file appendPoints wrote.
func readPoints(path string) ([]peerPoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var points []peerPoint
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		var p peerPoint
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		points = append(points, p)
	}
	return points, sc.Err()
}

// plotPeers draws the points to a PNG at out: three panels over the number of virtual users.
func plotPeers(points []peerPoint, title, out string) error {
	panels := []struct {
		label string
		value func(peerPoint) float64
	}{
		{"added p50 over no webhook (ms)", func(p peerPoint) float64 { return p.AddedP50Ms }},
		{"its CPU seconds per 1,000 creates", func(p peerPoint) float64 { return p.CPUPer1000 }},
		{"its peak resident memory (MiB)", func(p peerPoint) float64 { return p.PeakRSSMiB }},
	}
	var names []string
	seen := map[string]bool{}
	for _, p := range points {
		if !seen[p.Contender] {
			seen[p.Contender] = true
			names = append(names, p.Contender)
		}
	}
	palette := []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	}
	row := make([]*plot.Plot, len(panels))
	for i, panel := range panels {
		p := plot.New()
		if i == 0 {
			p.Title.Text = title
		}
		p.X.Label.Text = "virtual users"
		p.Y.Label.Text = panel.label
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		p.Legend.Top, p.Legend.Left = true, true
		for k, name := range names {
			var pts plotter.XYs
			for _, pt := range points {
				if v := panel.value(pt); pt.Contender == name && v > 0 && pt.Users > 0 {
					pts = append(pts, plotter.XY{X: float64(pt.Users), Y: v})
				}
			}
			if len(pts) == 0 {
				continue // none has no CPU or memory of its own, nor an added p50
			}
			sort.Slice(pts, func(a, b int) bool { return pts[a].X < pts[b].X })
			line, marks, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			line.Color, marks.Color = palette[k%len(palette)], palette[k%len(palette)]
			line.Width = vg.Points(1.5)
			p.Add(line, marks)
			if i == 0 {
				p.Legend.Add(name, line, marks)
			}
		}
		row[i] = p
	}
	const w, h = 15 * vg.Inch, 4.5 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 2,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{row}, tiles, dc)
	for i, p := range row {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
