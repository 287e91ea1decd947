package adaptertest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// DebianImage is the Debian toolchain image (python3, gcc, make, git, Go; no agent) in the local
// docker daemon: sandboxer-debian:test as .ci/debian-image.sh builds it, or
// SANDBOXER_TEST_DEBIAN_IMAGE. Without it the test skips, or fails where SANDBOXER_TEST_REQUIRE
// names debian-image (CI).
func DebianImage(t testing.TB) string {
	t.Helper()
	img := os.Getenv("SANDBOXER_TEST_DEBIAN_IMAGE")
	if img == "" {
		img = "sandboxer-debian:test"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err == nil {
		defer c.Close()
		_, err = c.ImageInspect(ctx, img)
	}
	if err != nil {
		if testenv.Required("debian-image") {
			t.Fatalf("SANDBOXER_TEST_REQUIRE=debian-image but %s is not there (.ci/debian-image.sh builds it): %v", img, err)
		}
		t.Skipf("no image %s (.ci/debian-image.sh builds it; SANDBOXER_TEST_REQUIRE=debian-image fails instead): %v", img, err)
	}
	return img
}

// CheckRealWork runs real work in sb, a sandbox of the Debian toolchain image (issue 35): as the
// sandbox user with HOME its own (adapter.DefaultHome, outside the workspace), a Go module's tests, a C program built by make, Python,
// and a git commit and `git mv`, with the files written, listed and read through the adapter.
func CheckRealWork(t *testing.T, sb adapter.Sandbox) {
	t.Helper()
	ctx := ctxT(t)
	require.NoError(t, sb.WriteFile(ctx, "m/go.mod", []byte("module example.com/m\n\ngo 1.19\n")))
	require.NoError(t, sb.WriteFile(ctx, "m/sum.go", []byte("package m\n\nfunc Sum(a ...int) (s int) {\n\tfor _, v := range a {\n\t\ts += v\n\t}\n\treturn s\n}\n")))
	require.NoError(t, sb.WriteFile(ctx, "m/sum_test.go", []byte("package m\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(1, 2, 3) != 6 {\n\t\tt.Fatal(Sum(1, 2, 3))\n\t}\n}\n")))
	require.NoError(t, sb.WriteFile(ctx, "c/hello.c", []byte("#include <stdio.h>\nint main(void) { printf(\"hello from C\\n\"); return 0; }\n")))
	require.NoError(t, sb.WriteFile(ctx, "c/Makefile", []byte("hello: hello.c\n\tgcc -O2 -o hello hello.c\n")))

	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", `set -e
id -u; echo "$HOME"
cd m && go test ./... 2>&1 | sed 's/\t.*//'; cd ..
make -s -C c && ./c/hello
python3 -c 'import json, sys; print(json.dumps({"py": sys.version_info[0]}))'
git init -q g && cd g && echo x > f && git add f && git -c user.email=a@b -c user.name=a commit -qm one && git mv f h && git log --oneline | wc -l`},
		Timeout: 3 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "stdout %s\nstderr %s", res.Stdout, res.Stderr)
	assert.Equal(t, "1000\n"+adapter.DefaultHome+"\nok  \nhello from C\n{\"py\": 3}\n1\n", string(res.Stdout))

	l, ok := sb.(adapter.Lister)
	require.True(t, ok, "the container adapters list files")
	files, err := l.ListFiles(ctx, "c")
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, f.Path)
	}
	assert.ElementsMatch(t, []string{"c/hello.c", "c/Makefile", "c/hello"}, names)
	data, err := sb.ReadFile(ctx, "g/h")
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(data))
}
