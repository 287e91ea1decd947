package docker_test

import (
	"context"
	"fmt"
	"log"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/docker"
	"github.com/sandboxer/sandboxer/adapter/docker/image"
)

// Build the image once (idempotent), start a hardened sandbox, run a command, remove it.
// Not run by go test (it needs a Docker daemon); TestSmoke does the same with checks.
func Example() {
	ctx := context.Background()
	if _, err := image.Build(ctx, image.Options{Progress: func(s string) { log.Println(s) }}); err != nil {
		log.Fatal(err)
	}
	sb, err := docker.New(ctx, docker.Config{}) // no network, caps dropped, read-only root, 512 MiB
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
	fmt.Printf("%s", res.Stdout)
}
