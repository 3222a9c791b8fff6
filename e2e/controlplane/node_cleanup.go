// What Down does for a node once its processes are stopped: every container process and shim
// killed, every mount under the node's paths undone, the kubelet's cgroups removed, the pods' and
// the node's network namespaces deleted, the kernel settings put back and the host paths the node
// made removed. It runs on failure too, and a second run finds nothing left to do.
package controlplane

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cleanNode undoes what the node changed on the host. It goes on past errors and returns the
// first.
func (s *State) cleanNode() error {
	n := s.Node
	var errs []error
	// Containers: every process in the kubelet's cgroups, then the shims that watched them.
	for i := 0; i < 50; i++ {
		pids := append(cgroupProcs("kubepods"), processesOf(s.Bin("containerd-shim-runc-v2"))...)
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Mounts under the node's paths, the deepest first (the pods' network namespaces are
	// bind mounts under /run/netns).
	roots := append([]string{s.Path("containerd"), "/run/netns/cni-"}, nodeHostPaths...)
	for _, m := range mountsUnder(roots) {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("umount %s: %w", m, err))
		}
	}
	if matches, _ := filepath.Glob("/run/netns/cni-*"); len(matches) > 0 {
		for _, m := range matches {
			_ = os.Remove(m)
		}
	}
	if err := removeCgroups("kubepods"); err != nil {
		errs = append(errs, err)
	}
	if err := deleteNetns(n.Netns); err != nil {
		errs = append(errs, err)
	}
	if entries, err := os.ReadDir("/run/netns"); err == nil && len(entries) == 0 && n.NetnsMount {
		if err := unix.Unmount("/run/netns", unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("umount /run/netns: %w", err))
		}
	}
	for k, v := range n.Sysctls {
		if err := os.WriteFile(filepath.Join("/proc/sys", k), []byte(v), 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range n.Created {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cgroupHierarchies are the cgroup v1 hierarchies mounted under /sys/fs/cgroup (or the one v2
// hierarchy).
func cgroupHierarchies() []string {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join("/sys/fs/cgroup", e.Name())
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() { // not the cpu -> cpu,cpuacct links
			out = append(out, p)
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.procs"); err == nil {
		out = append(out, "/sys/fs/cgroup")
	}
	return out
}

// cgroupProcs lists the processes in the cgroup name (relative to each hierarchy's root) and
// below it.
func cgroupProcs(name string) []int {
	seen := map[int]bool{}
	for _, h := range cgroupHierarchies() {
		_ = filepath.WalkDir(filepath.Join(h, name), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	return out
}

// removeCgroups removes the cgroup name and everything below it in every hierarchy, the leaves
// first.
func removeCgroups(name string) error {
	var errs []error
	for _, h := range cgroupHierarchies() {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, name), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			var err error
			for i := 0; i < 20; i++ { // a killed process may take a moment to leave its cgroup
				if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// processesOf lists the processes running the executable bin.
func processesOf(bin string) []int {
	want, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == want {
			out = append(out, pid)
		}
	}
	return out
}

// mountsUnder lists the mount points that start with one of prefixes, the deepest first.
func mountsUnder(prefixes []string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		for _, p := range prefixes {
			if strings.HasPrefix(mp, p) {
				out = append(out, mp)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
