package controlplane

import (
	"fmt"
	"net"
	"testing"
)

func TestFreeRangeLiesOutsideTheEphemeralRange(t *testing.T) {
	for _, c := range []struct {
		name             string
		elo, ehi, lo, hi int
	}{
		{"Linux's default", 32768, 60999, 10000, 32767},
		{"an ephemeral range low in the ports", 10500, 50000, 50001, 65535},
		{"every port ephemeral: none", 1024, 65535, 0, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			lo, hi := freeRange(c.elo, c.ehi)
			if c.lo > c.hi && lo <= hi {
				t.Errorf("freeRange(%d, %d) = %d-%d, want none", c.elo, c.ehi, lo, hi)
			}
			if c.lo <= c.hi && (lo != c.lo || hi != c.hi) {
				t.Errorf("freeRange(%d, %d) = %d-%d, want %d-%d", c.elo, c.ehi, lo, hi, c.lo, c.hi)
			}
		})
	}
}

func TestFreePortIsFreeOutsideTheEphemeralRangeAndNeverGivenTwice(t *testing.T) {
	elo, ehi := readEphemeralRange()
	seen := map[int]bool{}
	for i := 0; i < 50; i++ {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p >= elo && p <= ehi {
			t.Errorf("port %d is in the ephemeral range %d-%d", p, elo, ehi)
		}
		if seen[p] {
			t.Errorf("port %d given twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Errorf("port %d: %v", p, err)
			continue
		}
		l.Close()
	}
}
