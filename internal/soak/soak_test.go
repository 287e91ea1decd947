//go:build linux

package soak_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/adapter/oci"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// grace is how long the janitors, agents and daemons get to clean up after the last kill.
const grace = 15 * time.Second

// run is what one soak made: the owners' pids, the sandboxes' ids, their temporary directories.
type run struct {
	root  string // everything the test owns on disk
	state string // the oci state directory (under root)
	mark  string // the prefix of every marker

	mu     sync.Mutex
	owners map[string][]int    // kind -> pids of its owners
	ids    map[string][]string // kind -> ids of its sandboxes
	tmps   map[string][]string // kind -> the TMPDIRs of its owners
}

// TestSoak: for each adapter, batches of perBatch sandboxes made and destroyed by an owner
// process while commands run in them, the owner killed with SIGKILL at the last sandbox of each
// batch, mid-call; then nothing may be left: no container, no process, no cgroup, no mount, no
// temporary directory. 10 batches per adapter (100 sandboxes), 2 under -short.
func TestSoak(t *testing.T) {
	if os.Getenv(ownerEnv) != "" {
		t.Skip("this is an owner process")
	}
	// Orphans (a janitor, a container's init, a command that got away) come to this process, to
	// be counted and reaped, instead of to init.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal("PR_SET_CHILD_SUBREAPER:", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	batches := 10
	if testing.Short() {
		batches = 2
	}
	root, err := os.MkdirTemp("", "sandboxer-soak-")
	if err != nil {
		t.Fatal(err)
	}
	r := &run{root: root, state: filepath.Join(root, "oci-state"), mark: fmt.Sprintf("soakmark-%d", os.Getpid()),
		owners: map[string][]int{}, ids: map[string][]string{}, tmps: map[string][]string{}}
	if err := os.Mkdir(r.state, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.clean(t) })
	start := time.Now()
	// The adapters run at once (t.Parallel would hold them to -test.parallel, GOMAXPROCS).
	var wg sync.WaitGroup
	for _, k := range kinds {
		wg.Go(func() {
			t.Run(k.name, func(t *testing.T) {
				if k.check != nil {
					err := r.probe(k)
					if err != nil && testenv.Required(k.required) {
						t.Fatalf("SANDBOXER_TEST_REQUIRE=%s but %s does not work here: %v", k.required, k.name, err)
					}
					if err != nil {
						t.Skipf("%s does not work here (SANDBOXER_TEST_REQUIRE=%s makes it a failure): %v", k.name, k.required, err)
					}
				}
				n := batches
				if k.batches != 0 {
					n = min(n, k.batches)
				}
				kstart := time.Now()
				for b := range n {
					r.batch(t, k, b)
				}
				t.Logf("%s: %d sandboxes in %d owners killed, %s", k.name, n*perBatch, n, time.Since(kstart).Round(time.Millisecond))
				r.expectClean(t, k.name)
			})
		})
	}
	wg.Wait()
	t.Logf("all batches: %s", time.Since(start).Round(time.Millisecond))
	// Everything of every adapter, and no orphan of any.
	r.expectClean(t, "")
}

// expectClean fails t when what the owners of kind (all kinds: "") left is not gone within
// grace.
func (r *run) expectClean(t *testing.T, kind string) {
	killed := time.Now()
	var left []string
	for {
		left = r.leftovers(kind)
		if len(left) == 0 || time.Since(killed) > grace {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("left behind %s after the last owner's kill:\n  %s", grace, strings.Join(left, "\n  "))
	} else {
		t.Logf("%s clean %s after the last owner's kill", cmp.Or(kind, "all"), time.Since(killed).Round(time.Millisecond))
	}
}

// probe runs k.check in an owner process.
func (r *run) probe(k kind) error {
	cmd := exec.Command(os.Args[0], "-test.run=^TestSoakOwner$", "-test.count=1")
	cmd.Env = append(os.Environ(), ownerEnv+"="+k.name, stateEnv+"="+r.state, probeEnv+"=1")
	out, err := cmd.CombinedOutput()
	if !bytes.Contains(out, []byte("WORKS\n")) {
		return fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// batch runs owner number b of kind k and kills it with SIGKILL when it says KILL.
func (r *run) batch(t *testing.T, k kind, b int) {
	tmp := filepath.Join(r.root, fmt.Sprintf("tmp-%s-%d", k.name, b))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.tmps[k.name] = append(r.tmps[k.name], tmp)
	r.mu.Unlock()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSoakOwner$", "-test.count=1")
	cmd.Env = append(os.Environ(), ownerEnv+"="+k.name, stateEnv+"="+r.state,
		markEnv+"="+fmt.Sprintf("%s-%s-%d", r.mark, k.name, b), "TMPDIR="+tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.owners[k.name] = append(r.owners[k.name], cmd.Process.Pid)
	r.mu.Unlock()
	// An owner that hangs is killed all the same, and the batch fails.
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	killed := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "SANDBOX":
			r.mu.Lock()
			r.ids[k.name] = append(r.ids[k.name], f[2])
			r.mu.Unlock()
		case len(f) > 0 && f[0] == "FAIL":
			t.Errorf("%s batch %d: %s", k.name, b, sc.Text())
		case len(f) == 2 && f[0] == "KILL":
			// The marker scan sees the commands of a live owner (it is no empty check).
			if mark := fmt.Sprintf("%s-%s-%d-", r.mark, k.name, b); k.hostProcesses && len(marked(mark)) == 0 {
				t.Errorf("%s batch %d: no process with the marker %s while its owner lives", k.name, b, mark)
			}
			killed = cmd.Process.Signal(syscall.SIGKILL) == nil
		}
		if killed {
			break
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Errorf("%s batch %d: the owner ended before its last sandbox's long command started; stderr:\n%s", k.name, b, stderr.Bytes())
	}
}

// leftovers lists what the owners of kind (all kinds: "") left: processes (marked, and for all
// kinds the children of this subreaper), containers, cgroups, mounts, files in the temporary
// directories. It reaps zombie children.
func (r *run) leftovers(kind string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	sel := func(name string) bool { return kind == "" || kind == name }
	var out []string
	if kind == "" {
		out = append(out, orphans()...)
		out = append(out, marked(r.mark+"-")...)
	} else {
		for b := range r.owners[kind] {
			out = append(out, marked(fmt.Sprintf("%s-%s-%d-", r.mark, kind, b))...)
		}
	}

	// Containers.
	if sel("docker") && len(r.owners["docker"]) > 0 {
		out = append(out, r.dockerLeftovers()...)
	}
	if ents, err := os.ReadDir(filepath.Join(r.state, "oci", "runtime")); err == nil {
		for _, e := range ents {
			rt := e.Name()
			if !sel("oci-" + rt) {
				continue
			}
			list, err := exec.Command(rt, "--root", filepath.Join(r.state, "oci", "runtime", rt), "list", "--quiet").CombinedOutput()
			if err != nil {
				out = append(out, fmt.Sprintf("%s list: %v: %s", rt, err, list))
			} else if s := strings.TrimSpace(string(list)); s != "" {
				out = append(out, fmt.Sprintf("%s containers: %s", rt, strings.Join(strings.Fields(s), " ")))
			}
		}
	}

	// Cgroups: the local adapter's are sandboxer-OWNERPID-*, the oci adapter's sandboxer-ID.
	var names []string
	for _, name := range []string{"local", "local-off"} {
		for _, pid := range r.owners[name] {
			if sel(name) {
				names = append(names, fmt.Sprintf("sandboxer-%d-", pid))
			}
		}
	}
	var ids []string // of the sandboxes of kind
	for name, list := range r.ids {
		if !sel(name) {
			continue
		}
		ids = append(ids, list...)
		if strings.HasPrefix(name, "oci-") {
			for _, id := range list {
				names = append(names, "sandboxer-"+id)
			}
		}
	}
	for _, dir := range cgroupRoots() {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			for _, n := range names {
				if d.Name() == n || (strings.HasSuffix(n, "-") && strings.HasPrefix(d.Name(), n)) {
					out = append(out, "cgroup "+p)
				}
			}
			return nil
		})
	}

	// Mounts: none under the test's directory (of kind: under its TMPDIRs), none naming a sandbox.
	under := []string{r.root}
	if kind != "" {
		under = r.tmps[kind]
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(mi), "\n") {
			if slices.ContainsFunc(under, func(d string) bool { return strings.Contains(line, d) }) ||
				slices.ContainsFunc(ids, func(id string) bool { return strings.Contains(line, id) }) {
				out = append(out, "mount "+line)
			}
		}
	}

	// Temporary directories: the owners' TMPDIRs are empty, the oci state directory holds only
	// what its sandboxes share (the root file system, the agent's copy, and where the host has
	// /dev/kvm gVisor's platform decision, its lock, and the empty directory of its probes) and
	// the empty directories of its layout.
	for name, tmps := range r.tmps {
		for _, tmp := range tmps {
			ents, _ := os.ReadDir(tmp)
			for _, e := range ents {
				if sel(name) {
					out = append(out, "in TMPDIR: "+filepath.Join(tmp, e.Name()))
				}
			}
		}
	}
	filepath.WalkDir(r.state, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(r.state, p)
		switch {
		case rel == "oci/rootfs" || rel == "oci/agent":
			return fs.SkipDir
		case !d.IsDir() && slices.Contains([]string{"oci/runsc-platform.json", "oci/.runsc-platform.lock"}, rel):
		case d.IsDir() && slices.Contains([]string{".", "oci", "oci/sandboxes", "oci/workspaces", "oci/runtime", "oci/probes"}, rel):
		case d.IsDir() && filepath.Dir(rel) == "oci/runtime":
		case kind != "" && !slices.ContainsFunc(ids, func(id string) bool { return strings.Contains(d.Name(), id) }):
			// another kind's
		default:
			out = append(out, "in the oci state directory: "+p)
			if d.IsDir() {
				return fs.SkipDir
			}
		}
		return nil
	})
	return out
}

// orphans lists the live children of this process (a subreaper: every orphan comes to it), and
// reaps the dead ones.
func orphans() []string {
	var out []string
	self := os.Getpid()
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		comm := string(stat[bytes.IndexByte(stat, '(')+1 : i])
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == self {
			if f[0] == "Z" {
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
				continue
			}
			args, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
			out = append(out, fmt.Sprintf("process %d (%s) %q, a child of the test (an orphan)", pid, comm, bytes.ReplaceAll(args, []byte{0}, []byte{' '})))
			continue
		}
	}
	return out
}

// marked lists the processes with mark in their argv or environment.
func marked(mark string) []string {
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		for _, file := range []string{"cmdline", "environ"} {
			data, _ := os.ReadFile(filepath.Join("/proc", p.Name(), file))
			if bytes.Contains(data, []byte(mark)) {
				args, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
				out = append(out, fmt.Sprintf("process %d with a marker in its %s: %q", pid, file, bytes.ReplaceAll(args, []byte{0}, []byte{' '})))
				break
			}
		}
	}
	return out
}

// dockerLeftovers lists the containers of the docker owners, by their owner label and by id.
func (r *run) dockerLeftovers() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return []string{"docker: " + err.Error()}
	}
	defer c.Close()
	host, _ := os.Hostname()
	owners := map[string]bool{}
	for _, pid := range r.owners["docker"] {
		owners[fmt.Sprintf("%s:%d", host, pid)] = true
	}
	res, err := c.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", docker.LabelOwner)})
	if err != nil {
		return []string{"docker list: " + err.Error()}
	}
	var out []string
	for _, it := range res.Items {
		if owners[it.Labels[docker.LabelOwner]] || slices.Contains(r.ids["docker"], it.ID) {
			out = append(out, fmt.Sprintf("docker container %s %v (%s) of owner %s", it.ID[:12], it.Names, it.State, it.Labels[docker.LabelOwner]))
		}
	}
	return out
}

// cgroupRoots are the mount points of the cgroup hierarchies (v1 and v2).
func cgroupRoots() []string {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) >= 5 && len(g) >= 1 && (g[0] == "cgroup" || g[0] == "cgroup2") {
			out = append(out, f[4])
		}
	}
	return out
}

// clean removes what a failed soak left (so that a failure does not leak either) and the test's
// directory.
func (r *run) clean(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(r.state, "oci", "sandboxes")); err == nil {
		if _, err := oci.Prune(ctx, oci.Config{StateDir: r.state}, oci.PruneOptions{All: true}); err != nil {
			t.Log("oci prune:", err)
		}
	}
	if len(r.owners["docker"]) > 0 {
		if c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation()); err == nil {
			host, _ := os.Hostname()
			for _, pid := range r.owners["docker"] {
				f := make(client.Filters).Add("label", fmt.Sprintf("%s=%s:%d", docker.LabelOwner, host, pid))
				res, _ := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
				for _, it := range res.Items {
					c.ContainerRemove(ctx, it.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
				}
			}
			c.Close()
		}
	}
	for _, p := range marked(r.mark) {
		var pid int
		if _, err := fmt.Sscanf(p, "process %d ", &pid); err == nil && pid > 1 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// The root file system's directories are read-only.
	filepath.WalkDir(r.root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	if err := os.RemoveAll(r.root); err != nil {
		t.Error(err)
	}
}
