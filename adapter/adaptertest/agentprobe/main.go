//go:build linux

// Command agentprobe is the hostile command of adaptertest.CheckAgentUntouchable: run inside a
// sandbox, it finds every sandbox agent (a process whose argv[0] is agent.Path) and tries what a
// command that wants to forge the agent's answers would: stop it, trace it, open its
// descriptors, memory and environment through /proc, and connect to its hub. It prints one line
// per attempt, "PID what: ok" or "PID what: refused: ERROR", and "agents: N".
package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"

	"github.com/sandboxer/sandboxer/adapter/agent"
)

func main() {
	d, err := os.ReadDir("/proc")
	if err != nil {
		fmt.Println("readdir /proc:", err)
		os.Exit(1)
	}
	agents := 0
	for _, e := range d {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.HasPrefix(cmdline, []byte(agent.Path+"\x00")) {
			continue
		}
		agents++
		attack(pid)
	}
	report(0, "hub connect", func() error {
		c, err := net.Dial("unix", agent.HubSocket)
		if err == nil {
			c.Close()
		}
		return err
	})
	fmt.Println("agents:", agents)
}

func attack(pid int) {
	p := "/proc/" + strconv.Itoa(pid)
	report(pid, "SIGSTOP", func() error {
		err := syscall.Kill(pid, syscall.SIGSTOP)
		if err == nil {
			syscall.Kill(pid, syscall.SIGCONT)
		}
		return err
	})
	report(pid, "SIGKILL", func() error { return syscall.Kill(pid, 0) }) // the permission check of any signal
	report(pid, "ptrace attach", func() error {
		err := syscall.PtraceAttach(pid)
		if err == nil {
			syscall.PtraceDetach(pid)
		}
		return err
	})
	for _, f := range []string{"mem", "environ", "fd/0", "fd/1"} {
		report(pid, "open "+f, func() error {
			fh, err := os.Open(p + "/" + f)
			if err == nil {
				fh.Close()
			}
			return err
		})
	}
	report(pid, "list fd", func() error {
		_, err := os.ReadDir(p + "/fd")
		return err
	})
}

func report(pid int, what string, try func() error) {
	if err := try(); err != nil {
		fmt.Printf("%d %s: refused: %v\n", pid, what, err)
		return
	}
	fmt.Printf("%d %s: ok\n", pid, what)
}
