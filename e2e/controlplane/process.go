// The control plane's processes: each runs in a session of its own with its output in
// NAME.log and its pid in NAME.pid under the state directory, so it outlives the command that
// started it and `down` (or a test) can stop it.
package controlplane

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// children are the processes this process started; they must be waited for, or a stopped one
// stays a zombie that still answers kill(pid, 0).
var (
	childrenMu sync.Mutex
	children   = map[int]chan struct{}{}
)

// startProcess starts bin with args in its own session, appending its output to dir/name.log,
// and records its pid in dir/name.pid.
func startProcess(dir, name, bin string, args []string, env []string) (int, error) {
	logFile, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting %s: %w", name, err)
	}
	pid := cmd.Process.Pid
	done := make(chan struct{})
	childrenMu.Lock()
	children[pid] = done
	childrenMu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	if err := os.WriteFile(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return 0, err
	}
	return pid, nil
}

// processPid reads dir/name.pid; 0 when there is none.
func processPid(dir, name string) int {
	b, err := os.ReadFile(filepath.Join(dir, name+".pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	childrenMu.Lock()
	done, mine := children[pid]
	childrenMu.Unlock()
	if mine {
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) STATE ...: comm may hold spaces and parentheses, so read after the last ')'.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// stopProcess sends SIGTERM to the process recorded as dir/name.pid, waits up to grace for it
// to exit, then kills it, and removes the pid file. A process already gone is not an error.
func stopProcess(dir, name string, grace time.Duration) error {
	pid := processPid(dir, name)
	defer os.Remove(filepath.Join(dir, name+".pid"))
	if !alive(pid) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 100 && alive(pid); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		return fmt.Errorf("%s (pid %d) did not exit", name, pid)
	}
	return nil
}

// waitHealthy polls url until it answers 200, the process dies, or timeout passes. The error
// carries the end of the process's log.
func waitHealthy(dir, name, url string, client *http.Client, timeout time.Duration) error {
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // health only: no data crosses
		}}
	}
	pid := processPid(dir, name)
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return fmt.Errorf("%s exited during start-up:\n%s", name, logTail(dir, name, 30))
		}
		res, err := client.Get(url)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
			last = res.Status
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not healthy at %s after %s (%s):\n%s", name, url, timeout, last, logTail(dir, name, 30))
}

// logTail is the last n lines of dir/name.log.
func logTail(dir, name string, n int) string {
	b, err := os.ReadFile(filepath.Join(dir, name+".log"))
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var errNotUp = errors.New("the control plane is not up")
