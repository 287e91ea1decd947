package memory_test

import (
	"context"
	"fmt"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/adapter/memory"
)

func Example() {
	ctx := context.Background()
	sb, err := memory.New(memory.Config{MaxLoopIterations: 10_000})
	if err != nil {
		panic(err)
	}
	defer sb.Stop(ctx)

	_ = sb.WriteFile(ctx, "notes/todo.txt", []byte("write docs\nfix bug\nship\n"))
	res, err := sb.ExecuteCommand(ctx, adapter.Command{
		Args: []string{"sh", "-c", `grep -n bug notes/todo.txt; wc -l < notes/todo.txt; echo done > out.txt`},
	})
	if err != nil {
		panic(err)
	}
	fmt.Print(string(res.Stdout))
	out, _ := sb.ReadFile(ctx, "out.txt")
	fmt.Print(string(out))
	// Output:
	// 2:fix bug
	// 3
	// done
}
