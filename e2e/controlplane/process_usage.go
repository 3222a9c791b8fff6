package controlplane

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Names of the control plane's processes that benches and tests measure (Pid).
const (
	ShmguardProcess  = shmguardName
	APIServerProcess = "kube-apiserver"
)

// Pid is the pid of the control plane's process `name` (one of its own, a fleet's or a peer's),
// 0 when it does not run.
func (s *State) Pid(name string) int {
	if pid := processPid(s.Dir, name); alive(pid) {
		return pid
	}
	return 0
}

// CPUSeconds is a process's user and system time so far (/proc/PID/stat, in clock ticks of
// 1/100 s: USER_HZ on Linux).
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command's closing parenthesis; utime and stime are the 14th and 15th.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command", pid, len(fields))
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, fields[11], fields[12])
	}
	return (utime + stime) / 100, nil
}

// PeakRSS is the most resident memory a process has had, in bytes (VmHWM of /proc/PID/status).
func PeakRSS(pid int) (int64, error) { return statusBytes(pid, "VmHWM") }

// RSS is a process's resident memory now, in bytes (VmRSS of /proc/PID/status).
func RSS(pid int) (int64, error) { return statusBytes(pid, "VmRSS") }

// statusBytes is the field of /proc/PID/status given in kB, in bytes.
func statusBytes(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}
