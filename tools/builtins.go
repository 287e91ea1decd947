package tools

// builtins is the fixed list of built-in tools, in the order the CLI and MCP list them.
var builtins = []*Tool{Read, Write, Edit, Grep, Bash}

// Builtins returns the five built-in tools: read, write, edit, grep, bash (a new slice each call).
func Builtins() []*Tool {
	return append([]*Tool(nil), builtins...)
}

// Lookup returns the built-in tool called name, or nil.
func Lookup(name string) *Tool {
	for _, t := range builtins {
		if t.meta.Name == name {
			return t
		}
	}
	return nil
}
