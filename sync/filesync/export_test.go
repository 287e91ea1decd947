package filesync

// SetApplyBudget lowers the in-memory budget of a flush for a test; the returned func restores it.
func SetApplyBudget(n int) func() {
	old := applyBudget
	applyBudget = n
	return func() { applyBudget = old }
}
