//go:build linux && !sandboxer_portable

package local_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/local"
)

// Issue 33, finding 5: every sandbox of a root caller ran as one host uid, so one sandbox read and
// planted keys in another's keyrings, and exhausted the per-uid quotas (keys, inotify instances)
// of all. Each sandbox now leases a host uid of its own.

// sandboxUID is the host uid a sandbox's commands run as, from the command's own uid_map.
func sandboxUID(t *testing.T, sb *local.Sandbox) int {
	t.Helper()
	res := run(t, sb, adapter.Command{Args: []string{"cat", "/proc/self/uid_map"}})
	m := regexp.MustCompile(`^\s*0\s+(\d+)\s+1\s*$`).FindStringSubmatch(string(res.Stdout))
	require.NotNil(t, m, "one uid mapped: %q", res.Stdout)
	uid, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	assert.Contains(t, res.Isolation.Layers, local.LayerUIDPerSandbox)
	return uid
}

// hostProcessesOf lists the host processes whose real uid is uid.
func hostProcessesOf(uid int) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && f[1] == strconv.Itoa(uid) {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// Two sandboxes at once are two host uids, both in the sandbox range; the host sees each one's
// processes as that uid, and none of it once the sandbox is stopped.
func TestSandboxesHaveUIDsOfTheirOwn(t *testing.T) {
	t.Parallel()
	requireLayers(t, local.LayerUIDPerSandbox)
	a, b := newIsolated(t, local.Config{}), newIsolated(t, local.Config{})
	ua, ub := sandboxUID(t, a), sandboxUID(t, b)
	assert.NotEqual(t, ua, ub, "two sandboxes at once share no uid")
	for _, uid := range []int{ua, ub} {
		assert.Greater(t, uid, local.HostUID)
		assert.LessOrEqual(t, uid, local.HostUID+65535)
		assert.NotEmpty(t, hostProcessesOf(uid), "the sandbox's helper runs as %d on the host", uid)
	}
	require.NoError(t, a.Stop(context.Background()))
	assert.Empty(t, hostProcessesOf(ua), "nothing of the stopped sandbox's uid runs")
	assert.NotEmpty(t, hostProcessesOf(ub), "the other sandbox still runs")
}

// keyProbe drives keyctl(2) and add_key(2) through python3's ctypes (keyctl(1) may not be
// installed): "owner TOKEN" adds a secret key to the user keyring, then fills the key quota;
// "other RING KEY" attacks another sandbox's user keyring and key; "search" looks for a
// planted key in the user keyring.
const keyProbe = `import ctypes,platform,sys
KC,AK={'x86_64':(250,248),'aarch64':(219,217)}[platform.machine()]
libc=ctypes.CDLL(None,use_errno=True)
L=ctypes.c_long
def res(r): return r if r>=0 else -ctypes.get_errno()
def keyctl(*a): return res(libc.syscall(L(KC),*[x if isinstance(x,(bytes,ctypes.Array)) else L(x) for x in a]))
def add(desc,payload,ring): return res(libc.syscall(L(AK),b"user",desc.encode(),payload.encode(),L(len(payload)),L(ring)))
def read(k):
    buf=ctypes.create_string_buffer(4096); r=keyctl(11,k,buf,4096)
    return buf.raw[:r] if r>=0 else r
mode=sys.argv[1]
if mode=='owner':
    ring=keyctl(0,-4,1); k=add('secret','SECRET-'+sys.argv[2],-4); n=0
    while True:
        r=add('fill%d'%n,'x',-4)
        if r<0: break
        n+=1
    print('owner',ring,k,n,r)
elif mode=='other':
    ring,k=int(sys.argv[2]),int(sys.argv[3])
    print('read',read(k)); print('link',keyctl(8,ring,-3)); print('read-after-link',read(k))
    print('plant',add('planted','PLANTED',ring)); print('own',add('own','x',-3))
else:
    print('search',keyctl(10,-4,b'user',b'planted',0))`

// Sandbox A's user keyring and keys are out of B's reach (no read, no link, no planted key), and
// A holding its whole key quota leaves B's intact, even after A's call has ended.
func TestKeyringsAndKeyQuotaArePerSandbox(t *testing.T) {
	t.Parallel()
	requireLayers(t, local.LayerUIDPerSandbox, local.LayerKeyring)
	needTool(t, "python3")
	a, b := newIsolated(t, local.Config{}), newIsolated(t, local.Config{})
	token := randomToken()
	res := run(t, a, adapter.Command{Args: []string{"python3", "-c", keyProbe, "owner", token}})
	f := strings.Fields(string(res.Stdout))
	require.Len(t, f, 5, "%s %s", res.Stdout, res.Stderr)
	ring, key := f[1], f[2]
	require.NotContains(t, ring, "-", "A has a user keyring: %s", res.Stdout)
	require.NotContains(t, key, "-", "A added its key: %s", res.Stdout)
	assert.Equal(t, strconv.Itoa(-int(unix.EDQUOT)), f[4], "A filled its key quota: %s", res.Stdout)

	res = run(t, b, adapter.Command{Args: []string{"python3", "-c", keyProbe, "other", ring, key}})
	out := string(res.Stdout)
	assert.NotContains(t, out, "SECRET", "B read A's key")
	assert.Regexp(t, `(?m)^link -\d+$`, out, "B cannot link A's user keyring")
	assert.Regexp(t, `(?m)^plant -\d+$`, out, "B cannot add a key to A's user keyring")
	assert.Regexp(t, `(?m)^own \d+$`, out, "B's key quota is its own: %s", res.Stderr)

	res = run(t, a, adapter.Command{Args: []string{"python3", "-c", keyProbe, "search"}})
	assert.Equal(t, fmt.Sprintf("search %d\n", -int(unix.ENOKEY)), string(res.Stdout), "no key was planted in A's user keyring")
}

// Sandbox A holding every inotify instance its uid may have leaves inotify_init working in
// sandbox B and in this (the caller's) process.
func TestInotifyQuotaIsPerSandbox(t *testing.T) {
	t.Parallel()
	requireLayers(t, local.LayerUIDPerSandbox)
	needTool(t, "python3")
	limit, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances")
	require.NoError(t, err)
	a, b := newIsolated(t, local.Config{}), newIsolated(t, local.Config{})
	hold := `import ctypes,os,time
libc=ctypes.CDLL(None,use_errno=True)
fds=[]
while True:
    fd=libc.inotify_init()
    if fd<0: break
    fds.append(fd)
e=ctypes.get_errno()
open('held.tmp','w').write('%d %d\n'%(len(fds),e)); os.rename('held.tmp','held')
while not os.path.exists('release'): time.sleep(0.05)`
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = a.ExecuteCommand(ctx, adapter.Command{Args: []string{"python3", "-c", hold}, Timeout: 2 * time.Minute})
	}()
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(a.Dir(), "release"), nil, 0o644)
		cancel()
		wg.Wait()
	})
	var held []byte
	require.Eventually(t, func() bool {
		held, err = os.ReadFile(filepath.Join(a.Dir(), "held"))
		return err == nil
	}, time.Minute, 20*time.Millisecond, "A took its inotify instances")
	assert.Equal(t, fmt.Sprintf("%s %d\n", strings.TrimSpace(string(limit)), unix.EMFILE), string(held), "A holds every instance its uid may have")

	res := run(t, b, adapter.Command{Args: []string{"python3", "-c", "import ctypes;print(ctypes.CDLL(None,use_errno=True).inotify_init()>=0)"}})
	assert.Equal(t, "True\n", string(res.Stdout), "inotify_init works in B: %s", res.Stderr)
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	require.NoError(t, err, "inotify_init works for the caller")
	unix.Close(fd)
}

// A stopped sandbox's uid is free again: its lock file is gone, and the next lease from that uid
// on gets it.
func TestSandboxUIDReleasedAtStop(t *testing.T) {
	t.Parallel()
	requireLayers(t, local.LayerUIDPerSandbox)
	dir, err := local.UIDLockDir()
	require.NoError(t, err)
	sb := newIsolated(t, local.Config{})
	uid := sandboxUID(t, sb)
	lock := filepath.Join(dir, strconv.Itoa(uid))
	assert.True(t, lockedElsewhere(t, lock), "the running sandbox holds its uid's lock")

	require.NoError(t, sb.Stop(context.Background()))
	_, err = os.Stat(lock)
	assert.ErrorIs(t, err, os.ErrNotExist, "Stop removed the lock file")
	got, release, err := local.LeaseUIDFrom(uid)
	require.NoError(t, err)
	release()
	assert.Equal(t, uid, got, "the uid can be leased again")
}

// lockedElsewhere reports whether another open file holds the flock of path.
func lockedElsewhere(t *testing.T, path string) bool {
	t.Helper()
	locked, err := heldLock(path)
	require.NoError(t, err)
	return locked
}

func heldLock(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return false, nil
	}
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}

// uidLeft lists what of sandbox uid is left on the host: its processes, and its lease's lock file
// (the janitor removes a dead owner's).
func uidLeft(uid int) []string {
	left := hostProcessesOf(uid)
	for i, pid := range left {
		left[i] = fmt.Sprintf("process %s of uid %d", pid, uid)
	}
	dir, err := local.UIDLockDir()
	if err != nil {
		return append(left, err.Error())
	}
	if _, err := os.Stat(filepath.Join(dir, strconv.Itoa(uid))); !errors.Is(err, os.ErrNotExist) {
		left = append(left, fmt.Sprintf("the lock file of uid %d (%v)", uid, err))
	}
	return left
}
