package oci_test

import (
	"context"
	"fmt"
	"log"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/oci"
)

// Start a sandbox under gVisor (the first one unpacks the root file system into the state
// directory), write a file, search it, remove the sandbox. Not run by go test (it needs root and
// runsc); the package's tests do the same with checks.
func Example() {
	ctx := context.Background()
	sb, err := oci.New(ctx, oci.Config{Runtime: oci.Runsc}) // no network, caps dropped, read-only root, 512 MiB
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Stop(ctx)
	if err := sb.WriteFile(ctx, "hello.txt", []byte("hello\n")); err != nil {
		log.Fatal(err)
	}
	res, err := sb.ExecuteCommand(ctx, adapter.Command{Args: []string{"rg", "-n", "hello", "."}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s%v\n", res.Stdout, res.Isolation.Layers)
}
