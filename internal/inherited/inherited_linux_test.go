package inherited

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const childEnv = "SANDBOXER_TEST_INHERITED_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// child is a process that inherited descriptors 3 to 5: it keeps 4 and closes the others, after
// its runtime opened descriptors of its own (the poller's, for a pipe), which must still work.
func child() int {
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	if err := Close(4); err != nil {
		fmt.Println(err)
		return 1
	}
	for fd := 3; fd <= 5; fd++ {
		fmt.Printf("%d:%v ", fd, isOpen(fd))
	}
	// The poller still works: a read deadline on the pipe made before Close.
	r.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, err = r.Read(make([]byte, 1))
	fmt.Printf("deadline:%v ", os.IsTimeout(err))
	w.WriteString("x")
	r.SetReadDeadline(time.Time{})
	_, err = r.Read(make([]byte, 1))
	fmt.Printf("read:%v\n", err == nil)
	return 0
}

func isOpen(fd int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/self/fd/%d", fd))
	return err == nil
}

// A descriptor inherited without close-on-exec is closed, except those kept; the runtime's own
// are not.
func TestCloseInherited(t *testing.T) {
	t.Parallel()
	var readers, writers []*os.File
	for range 3 {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		readers, writers = append(readers, r), append(writers, w)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.ExtraFiles = writers
	var out strings.Builder
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	for _, w := range writers {
		w.Close()
	}
	require.NoError(t, cmd.Wait())
	assert.Equal(t, "3:false 4:true 5:false deadline:true read:true\n", out.String())
	for _, r := range readers {
		// No writer is left: the pipe ends.
		r.SetReadDeadline(time.Now().Add(time.Minute))
		_, err := io.ReadAll(r)
		assert.NoError(t, err)
		r.Close()
	}
}
