package lifecycle_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/lifecycle"
)

// A long-lived local sandbox: created and written in one session, read in the next (another
// process could attach the same way), forked, and removed.
func ExampleManager() {
	ctx := context.Background()
	state, err := os.MkdirTemp("", "lifecycle-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(state)
	mgr := lifecycle.NewManager(state)
	o := lifecycle.Options{Adapter: "local", StateDir: state}

	rec, err := mgr.Create(ctx, o)
	if err != nil {
		log.Fatal(err)
	}
	s, err := mgr.Attach(ctx, rec.ID, o)
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Sandbox.WriteFile(ctx, "notes.txt", []byte("kept between sessions")); err != nil {
		log.Fatal(err)
	}
	s.Close() // detached: the sandbox stays

	s, err = mgr.Attach(ctx, rec.ID, o)
	if err != nil {
		log.Fatal(err)
	}
	b, _ := s.Sandbox.ReadFile(ctx, "notes.txt")
	fmt.Println(string(b))

	fork, _, err := mgr.Fork(ctx, s, o)
	if err != nil {
		log.Fatal(err)
	}
	s.Close()
	fmt.Println(fork.ForkOf == rec.ID)
	for _, id := range []string{fork.ID, rec.ID} {
		if err := mgr.Remove(ctx, id, o); err != nil {
			log.Fatal(err)
		}
	}
	recs, _ := mgr.List()
	fmt.Println(len(recs), "records left")
	// Output:
	// kept between sessions
	// true
	// 0 records left
}

// An ephemeral sandbox is the caller's until its Stop.
func ExampleOpen() {
	ctx := context.Background()
	sb, err := lifecycle.Open(ctx, lifecycle.Options{Adapter: "memory"})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Stop(ctx)
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"sh", "-c", "echo hello > f && cat f"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(res.Stdout))
	// Output: hello
}
