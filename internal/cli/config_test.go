package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter/kubernetes"
	"github.com/sandboxer/sandboxer/errs"
	"github.com/sandboxer/sandboxer/lifecycle"
)

// mcp-max-message-bytes is a setting like the others: default < config file < environment < flag,
// and a bad value is a usage error.
func TestMCPMaxMessageBytesSetting(t *testing.T) { // not parallel: it sets the environment
	cfg := filepath.Join(t.TempDir(), "sandboxer.yaml")
	load := func(args ...string) (Settings, error) { t.Helper(); return loadMCP(t, args...) }
	t.Setenv("SANDBOXER_CONFIG", "")
	t.Setenv("SANDBOXER_MCP_MAX_MESSAGE_BYTES", "")
	s, err := load("--config", cfg+".absent")
	require.Error(t, err, "an absent --config file")
	require.NoError(t, os.WriteFile(cfg, []byte("adapter: memory\n"), 0o644))
	s, err = load("--config", cfg)
	require.NoError(t, err)
	assert.Equal(t, DefaultMCPMaxMessageBytes, s.MCPMaxMessageBytes)
	assert.Equal(t, 16<<20, s.MCPMaxMessageBytes)

	require.NoError(t, os.WriteFile(cfg, []byte("mcp-max-message-bytes: 2048\n"), 0o644))
	s, err = load("--config", cfg)
	require.NoError(t, err)
	assert.Equal(t, 2048, s.MCPMaxMessageBytes, "config file")

	t.Setenv("SANDBOXER_MCP_MAX_MESSAGE_BYTES", "4096")
	s, err = load("--config", cfg)
	require.NoError(t, err)
	assert.Equal(t, 4096, s.MCPMaxMessageBytes, "environment over config file")

	s, err = load("--config", cfg, "--mcp-max-message-bytes", "8192")
	require.NoError(t, err)
	assert.Equal(t, 8192, s.MCPMaxMessageBytes, "flag over environment")

	for _, bad := range []string{"0", "1023", "1073741825", "lots"} {
		t.Setenv("SANDBOXER_MCP_MAX_MESSAGE_BYTES", bad)
		_, err = load("--config", cfg)
		assert.Error(t, err, bad)
	}
}

// sync-max-file-bytes follows the same layers; a size with a unit, and 0 or garbage are usage
// errors.
func TestSyncMaxFileBytesSetting(t *testing.T) { // not parallel: it sets the environment
	cfg := filepath.Join(t.TempDir(), "sandboxer.yaml")
	load := func(args ...string) (Settings, error) { t.Helper(); return loadMCP(t, args...) }
	t.Setenv("SANDBOXER_CONFIG", "")
	t.Setenv("SANDBOXER_SYNC_MAX_FILE_BYTES", "")
	require.NoError(t, os.WriteFile(cfg, []byte("adapter: memory\n"), 0o644))
	s, err := load("--config", cfg)
	require.NoError(t, err)
	assert.EqualValues(t, 100<<20, s.SyncMaxFileBytes)

	require.NoError(t, os.WriteFile(cfg, []byte("sync-max-file-bytes: 2MiB\n"), 0o644))
	s, err = load("--config", cfg)
	require.NoError(t, err)
	assert.EqualValues(t, 2<<20, s.SyncMaxFileBytes, "config file")
	t.Setenv("SANDBOXER_SYNC_MAX_FILE_BYTES", "4096")
	s, err = load("--config", cfg)
	require.NoError(t, err)
	assert.EqualValues(t, 4096, s.SyncMaxFileBytes, "environment over config file")
	s, err = load("--config", cfg, "--sync-max-file-bytes", "1GiB")
	require.NoError(t, err)
	assert.EqualValues(t, 1<<30, s.SyncMaxFileBytes, "flag over environment")
	for _, bad := range []string{"0", "-1", "lots"} {
		t.Setenv("SANDBOXER_SYNC_MAX_FILE_BYTES", bad)
		_, err = load("--config", cfg)
		assert.Error(t, err, bad)
	}
}

// disk: 0 (each adapter's default) by default; a size from the config file, the environment or
// the flag, in that order of precedence, reaches the local adapter's Config.Disk and the docker,
// oci and kubernetes adapters' WorkspaceBytes; "none" is no cap on any; garbage is a usage error.
func TestDiskSetting(t *testing.T) { // not parallel: it sets the environment
	cfg := filepath.Join(t.TempDir(), "sandboxer.yaml")
	load := func(args ...string) (Settings, error) { t.Helper(); return loadMCP(t, args...) }
	t.Setenv("SANDBOXER_CONFIG", "")
	t.Setenv("SANDBOXER_DISK", "")
	require.NoError(t, os.WriteFile(cfg, []byte("adapter: memory\n"), 0o644))
	s, err := load("--config", cfg)
	require.NoError(t, err)
	assert.Zero(t, s.Disk)
	assert.Zero(t, optionsOf(s).LocalConfig(t.TempDir()).Disk)

	require.NoError(t, os.WriteFile(cfg, []byte("disk: 512M\n"), 0o644))
	s, err = load("--config", cfg)
	require.NoError(t, err)
	assert.EqualValues(t, 512<<20, s.Disk, "config file")
	t.Setenv("SANDBOXER_DISK", "1GiB")
	s, err = load("--config", cfg)
	require.NoError(t, err)
	assert.EqualValues(t, 1<<30, s.Disk, "environment over config file")
	s, err = load("--config", cfg, "--disk", "2G")
	require.NoError(t, err)
	assert.EqualValues(t, int64(2<<30), s.Disk, "flag over environment")
	assert.EqualValues(t, int64(2<<30), optionsOf(s).LocalConfig(t.TempDir()).Disk)
	assert.EqualValues(t, int64(2<<30), optionsOf(s).DockerConfig().WorkspaceBytes)
	assert.EqualValues(t, int64(2<<30), optionsOf(s).OCIConfig().WorkspaceBytes)
	assert.EqualValues(t, int64(2<<30), optionsOf(s).KubernetesConfig().WorkspaceBytes)
	s, err = load("--config", cfg, "--disk", "none")
	require.NoError(t, err)
	assert.Zero(t, optionsOf(s).LocalConfig(t.TempDir()).Disk, "none: no cap on local")
	assert.EqualValues(t, -1, optionsOf(s).DockerConfig().WorkspaceBytes, "none: no cap on docker")
	assert.EqualValues(t, -1, optionsOf(s).OCIConfig().WorkspaceBytes, "none: no cap on oci")
	assert.EqualValues(t, -1, optionsOf(s).KubernetesConfig().WorkspaceBytes, "none: no limit on kubernetes")
	for _, bad := range []string{"-1", "lots"} {
		t.Setenv("SANDBOXER_DISK", bad)
		_, err = load("--config", cfg)
		assert.Error(t, err, bad)
	}
}

// no-caches: false by default; the config file, the environment or the flag set the local
// adapter's Config.NoCaches.
func TestNoCachesSetting(t *testing.T) { // not parallel: it sets the environment
	cfg := filepath.Join(t.TempDir(), "sandboxer.yaml")
	load := func(args ...string) (Settings, error) { t.Helper(); return loadMCP(t, args...) }
	t.Setenv("SANDBOXER_CONFIG", "")
	t.Setenv("SANDBOXER_NO_CACHES", "")
	require.NoError(t, os.WriteFile(cfg, []byte("adapter: memory\n"), 0o644))
	s, err := load("--config", cfg)
	require.NoError(t, err)
	assert.False(t, optionsOf(s).LocalConfig(t.TempDir()).NoCaches)
	s, err = load("--config", cfg, "--no-caches")
	require.NoError(t, err)
	assert.True(t, optionsOf(s).LocalConfig(t.TempDir()).NoCaches, "flag")
	require.NoError(t, os.WriteFile(cfg, []byte("no-caches: true\n"), 0o644))
	s, err = load("--config", cfg)
	require.NoError(t, err)
	assert.True(t, s.NoCaches, "config file")
	require.NoError(t, os.WriteFile(cfg, []byte("adapter: memory\n"), 0o644))
	t.Setenv("SANDBOXER_NO_CACHES", "true")
	s, err = load("--config", cfg)
	require.NoError(t, err)
	assert.True(t, s.NoCaches, "environment")
}

// allow-hosts: --allow-host (repeatable) or SANDBOXER_ALLOW_HOSTS (comma-separated); validated;
// never from a config file alone (it opens the network to hosts), and not with --allow-network.
func TestAllowHostsSetting(t *testing.T) { // not parallel: it sets the environment
	cfg := filepath.Join(t.TempDir(), "sandboxer.yaml")
	load := func(args ...string) (Settings, error) { t.Helper(); return loadMCP(t, args...) }
	t.Setenv("SANDBOXER_CONFIG", "")
	t.Setenv("SANDBOXER_ALLOW_HOSTS", "")
	t.Setenv("SANDBOXER_ALLOW_NETWORK", "")
	s, err := load()
	require.NoError(t, err)
	assert.Empty(t, s.AllowHosts)

	s, err = load("--allow-host", "modules.example.com", "--allow-host", "*.gitcontent.example.net,sums.example.com")
	require.NoError(t, err)
	assert.Equal(t, []string{"modules.example.com", "*.gitcontent.example.net", "sums.example.com"}, s.AllowHosts)

	t.Setenv("SANDBOXER_ALLOW_HOSTS", "modules.example.com, sums.example.com")
	s, err = load()
	require.NoError(t, err)
	assert.Equal(t, []string{"modules.example.com", "sums.example.com"}, s.AllowHosts)
	s, err = load("--allow-host", "git.example.com")
	require.NoError(t, err)
	assert.Equal(t, []string{"git.example.com"}, s.AllowHosts, "flag over environment")

	for _, bad := range []string{"*", "*.com", "http://x.example", "10.0.0.1", "a.example:443"} {
		_, err = load("--allow-host", bad)
		assert.ErrorContains(t, err, "--allow-host", bad)
	}
	_, err = load("--allow-host", "git.example.com", "--allow-network")
	assert.ErrorContains(t, err, "exclude each other")

	// A config file may not open hosts on its own; the environment or a flag may, over it.
	t.Setenv("SANDBOXER_ALLOW_HOSTS", "")
	require.NoError(t, os.WriteFile(cfg, []byte("allow-hosts: [github.com]\n"), 0o644))
	_, err = load("--config", cfg)
	assert.ErrorContains(t, err, "allow-hosts")
	s, err = load("--config", cfg, "--allow-host", "modules.example.com")
	require.NoError(t, err)
	assert.Equal(t, []string{"modules.example.com"}, s.AllowHosts)
}

// The kubernetes adapter's settings follow the same layers into kubernetes.Config: config file <
// environment < flag; a bad pull policy is a usage error; a relative kubeconfig becomes absolute;
// commands with only the state flags (sandbox rm, ls, prune) still read the environment.
func TestKubernetesSettings(t *testing.T) { // not parallel: it sets the environment
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sandboxer.yaml")
	keys := []string{"KUBECONFIG", "KUBE_CONTEXT", "NAMESPACE", "KUBERNETES_IMAGE", "IMAGE_PULL_POLICY", "RUNTIME_CLASS",
		"CONFIG", "ALLOW_NETWORK", "ALLOW_HOSTS", "REQUIRE_ISOLATION", "ADAPTER"}
	for _, k := range keys {
		t.Setenv("SANDBOXER_"+k, "")
	}
	exec := func(args ...string) (Settings, error) {
		t.Helper()
		c := newExecCmd(Streams{})
		require.NoError(t, c.Flags().Parse(args))
		return load(c.Flags())
	}

	s, err := exec()
	require.NoError(t, err)
	assert.Equal(t, kubernetes.Config{}, optionsOf(s).KubernetesConfig(), "no setting: the adapter's zero value")

	require.NoError(t, os.WriteFile(cfg, []byte("adapter: kubernetes\nkubeconfig: /etc/k/file.conf\nkube-context: ctx-file\n"+
		"namespace: ns-file\nkubernetes-image: img-file\nimage-pull-policy: Always\nruntime-class: gvisor\n"), 0o644))
	s, err = exec("--config", cfg)
	require.NoError(t, err)
	assert.Equal(t, kubernetes.Config{Kubeconfig: "/etc/k/file.conf", Context: "ctx-file", Namespace: "ns-file", Image: "img-file",
		ImagePullPolicy: "Always", RuntimeClassName: "gvisor"}, optionsOf(s).KubernetesConfig(), "config file")

	t.Setenv("SANDBOXER_NAMESPACE", "ns-env")
	t.Setenv("SANDBOXER_IMAGE_PULL_POLICY", "Never")
	t.Setenv("SANDBOXER_REQUIRE_ISOLATION", "true")
	s, err = exec("--config", cfg)
	require.NoError(t, err)
	k := optionsOf(s).KubernetesConfig()
	assert.Equal(t, "ns-env", k.Namespace, "environment over config file")
	assert.Equal(t, "Never", k.ImagePullPolicy)
	assert.True(t, k.RequireIsolation)
	assert.Equal(t, "ctx-file", k.Context, "the file's context, where the environment sets none")

	s, err = exec("--config", cfg, "--namespace", "ns-flag", "--kube-context", "ctx-flag", "--kubernetes-image", "img-flag",
		"--runtime-class", "kata", "--kubeconfig", "rel/kc", "--allow-host", "modules.example.com")
	require.NoError(t, err)
	k = optionsOf(s).KubernetesConfig()
	assert.Equal(t, kubernetes.Config{Kubeconfig: filepath.Join(mustGetwd(t), "rel", "kc"), Context: "ctx-flag", Namespace: "ns-flag",
		Image: "img-flag", ImagePullPolicy: "Never", RuntimeClassName: "kata", AllowHosts: []string{"modules.example.com"},
		RequireIsolation: true}, k, "flags over environment")
	require.NoError(t, k.Validate())

	s, err = exec("--allow-network")
	require.NoError(t, err)
	assert.True(t, optionsOf(s).KubernetesConfig().AllowNetwork)

	_, err = exec("--image-pull-policy", "Sometimes")
	assert.ErrorContains(t, err, "--image-pull-policy")
	t.Setenv("SANDBOXER_IMAGE_PULL_POLICY", "never")
	_, err = exec()
	assert.ErrorContains(t, err, "--image-pull-policy", "the policy is spelled as Kubernetes spells it")

	// sandbox rm, ls and prune declare only --config and --state-dir: the cluster comes from the
	// environment or the file.
	t.Setenv("SANDBOXER_IMAGE_PULL_POLICY", "")
	t.Setenv("SANDBOXER_KUBECONFIG", filepath.Join(dir, "env.kubeconfig"))
	rm := newSandboxRmCmd(Streams{})
	require.NoError(t, rm.Flags().Parse([]string{"--config", cfg}))
	s, err = load(rm.Flags())
	require.NoError(t, err)
	k = optionsOf(s).KubernetesConfig()
	assert.Equal(t, filepath.Join(dir, "env.kubeconfig"), k.Kubeconfig)
	assert.Equal(t, "ns-env", k.Namespace)
	assert.Equal(t, "img-file", k.Image)
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return wd
}

// loadMCP loads the settings of `sandboxer mcp` with args on its command line.
func loadMCP(t *testing.T, args ...string) (Settings, error) {
	t.Helper()
	c := newMCPCmd(Streams{})
	require.NoError(t, c.Flags().Parse(args))
	return load(c.Flags())
}

// --image reaches the oci adapter when given; its default (the docker adapter's image) leaves the
// oci adapter its own root file system.
func TestOCIImage(t *testing.T) { // not parallel: it sets the environment
	cfg := filepath.Join(t.TempDir(), "sandboxer.yaml")
	require.NoError(t, os.WriteFile(cfg, nil, 0o644))
	load := func(args ...string) (Settings, error) {
		t.Helper()
		c := newMCPCmd(Streams{})
		require.NoError(t, c.Flags().Parse(append([]string{"--config", cfg}, args...)))
		return load(c.Flags())
	}
	t.Setenv("SANDBOXER_IMAGE", "")
	s, err := load("--adapter", "oci")
	require.NoError(t, err)
	assert.Empty(t, optionsOf(s).OCIConfig().Image)
	s, err = load("--adapter", "oci", "--image", "docker-archive:/tmp/x.tar")
	require.NoError(t, err)
	assert.Equal(t, "docker-archive:/tmp/x.tar", optionsOf(s).OCIConfig().Image)
	assert.Equal(t, "docker-archive:/tmp/x.tar", optionsOf(s).DockerConfig().Image)
	s, err = load("--adapter", "oci", "--image", "oci-layout:img:v1")
	require.NoError(t, err)
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, "oci-layout:"+filepath.Join(wd, "img:v1"), optionsOf(s).OCIConfig().Image, "relative to where the command was given")
}

// The remote adapter's settings: --url is required with --adapter remote (INVALID_INPUT); the
// token comes from --token-file (relative to the call's directory) or SANDBOXER_TOKEN, never a
// config file's token key; a remote sandbox asks for the settings the call gave, not for this
// CLI's defaults.
func TestRemoteSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	call := filepath.Join(dir, "project") // the call's directory, the workspace a one-shot call copies
	require.NoError(t, os.Mkdir(call, 0o755))
	cfg := filepath.Join(dir, "sandboxer.yaml")
	require.NoError(t, os.WriteFile(cfg, nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tok"), []byte("sbx_fromfile\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty"), []byte("\n"), 0o600))
	load := func(env map[string]string, args ...string) (Settings, error) {
		t.Helper()
		c := newMCPCmd(Streams{})
		require.NoError(t, c.Flags().Parse(args))
		all := map[string]string{"SANDBOXER_CONFIG": cfg}
		for k, v := range env {
			all[k] = v
		}
		return loadIn(invocation{env: all, dir: call}, c.Flags())
	}
	url := []string{"--adapter", "remote", "--url", "http://127.0.0.1:7878"}

	_, err := load(nil, "--adapter", "remote")
	assert.ErrorIs(t, err, errs.InvalidInput)
	assert.ErrorContains(t, err, "--url")
	_, err = load(nil, "--adapter", "remote", "--sandbox", "sbx-000000000000")
	assert.NoError(t, err, "a long-lived sandbox's record names its server")

	s, err := load(map[string]string{"SANDBOXER_TOKEN": "sbx_fromenv"}, url...)
	require.NoError(t, err)
	o := optionsOf(s)
	assert.Equal(t, lifecycle.RemoteOptions{URL: "http://127.0.0.1:7878", Token: "sbx_fromenv"}, o.Remote)
	assert.Zero(t, o.Local.Memory, "the server's default, not this CLI's")
	assert.Zero(t, o.Local.Pids)
	assert.Empty(t, o.Image)
	assert.Empty(t, o.OCI.Runtime)
	s, err = load(map[string]string{"SANDBOXER_TOKEN": "sbx_fromenv"}, append(url, "--token-file", "../tok")...)
	require.NoError(t, err)
	o = optionsOf(s)
	assert.Equal(t, "sbx_fromfile", o.Remote.Token, "the file, relative to the call's directory")
	assert.Contains(t, o.Local.DenyRead, filepath.Join(dir, "tok"), "no local command reads the token")
	assert.Contains(t, o.Local.Protect, filepath.Join(dir, "tok"), "no workspace holds it")

	require.NoError(t, os.WriteFile(cfg, []byte("image: my-tools:1\ntoken-file: ../tok\n"), 0o644))
	s, err = load(map[string]string{"SANDBOXER_PIDS": "10"}, append(url, "--memory", "1GiB", "--runtime", "runsc",
		"--remote-adapter", "docker", "--remote-ttl", "2h", "--remote-idle-timeout", "none", "--remote-ca", "../ca.pem")...)
	require.NoError(t, err)
	o = optionsOf(s)
	assert.EqualValues(t, 1<<30, o.Local.Memory)
	assert.Equal(t, 10, o.Local.Pids)
	assert.Equal(t, "my-tools:1", o.Image)
	assert.Equal(t, "runsc", o.OCI.Runtime)
	assert.Equal(t, lifecycle.RemoteOptions{URL: "http://127.0.0.1:7878", Token: "sbx_fromfile", CAFile: filepath.Join(dir, "ca.pem"),
		Adapter: "docker", TTL: 2 * time.Hour, IdleTimeout: -1}, o.Remote)
	s, err = load(nil, "--adapter", "local")
	require.NoError(t, err)
	assert.EqualValues(t, int64(2)<<30, optionsOf(s).Local.Memory, "other adapters keep the CLI's defaults")
	assert.Equal(t, "runc", optionsOf(s).OCI.Runtime)

	require.NoError(t, os.WriteFile(cfg, []byte("token: sbx_secret\n"), 0o644))
	_, err = load(nil, url...)
	assert.ErrorContains(t, err, "never read from a config file")
	assert.NotContains(t, err.Error(), "sbx_secret")
	require.NoError(t, os.WriteFile(cfg, nil, 0o644))
	for _, bad := range [][]string{
		{"--token-file", "../empty"}, {"--token-file", "../absent"}, {"--remote-adapter", "remote"},
		{"--remote-idle-timeout", "soon"}, {"--remote-idle-timeout", "-1m"}, {"--remote-ttl", "-1h"},
	} {
		_, err = load(nil, append(url, bad...)...)
		assert.Error(t, err, "%v", bad)
	}
}
