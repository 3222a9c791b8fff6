package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPeerPointsRoundTripAndPlot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "peers.jsonl")
	first := []peerPoint{
		{Users: 1, Contender: "no webhook", P50Ms: 2.2},
		{Users: 1, Contender: "shmguard (webhook)", AddedP50Ms: 2.5, CPUPer1000: 0.27, PeakRSSMiB: 23},
	}
	second := []peerPoint{
		{Users: 10, Contender: "no webhook", P50Ms: 11.6},
		{Users: 10, Contender: "shmguard (webhook)", AddedP50Ms: 6.8, CPUPer1000: 0.17, PeakRSSMiB: 23},
	}
	for _, points := range [][]peerPoint{first, second} {
		if err := appendPoints(path, points); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readPoints(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(first, second...); len(got) != len(want) || got[3] != want[3] {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
	png := filepath.Join(dir, "peers.png")
	if err := plotPeers(got, "test", png); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(png)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s is not a PNG: it starts %q", png, b[:min(len(b), 8)])
	}
}

func TestPeerPointsNameTheBadLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "peers.jsonl")
	if err := os.WriteFile(path, []byte("{\"users\": 1}\n{\"users\": \"ten\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := readPoints(path)
	if err == nil || !strings.Contains(err.Error(), path+":2:") {
		t.Errorf("reading a file whose second line is bad: %v, want an error naming %s:2", err, path)
	}
}
