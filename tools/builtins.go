package tools

// builtins is the fixed list of built-in tools, in the order the CLI and MCP list them.
var builtins = []*Tool{Read, Write, Edit, Grep, Bash}

// processTools work on the background processes bash with opts.background starts.
var processTools = []*Tool{ProcessOutput, ProcessInput, ProcessKill, ProcessList}

// Builtins returns the five built-in tools: read, write, edit, grep, bash (a new slice each call).
func Builtins() []*Tool {
	return append([]*Tool(nil), builtins...)
}

// All returns every tool of this package, as the CLI and the MCP server offer them: the five
// built-ins, then process_output, process_input, process_kill and process_list.
func All() []*Tool {
	return append(Builtins(), processTools...)
}

// Lookup returns the tool of this package called name (built-in or process tool), or nil.
func Lookup(name string) *Tool {
	for _, t := range All() {
		if t.meta.Name == name {
			return t
		}
	}
	return nil
}
