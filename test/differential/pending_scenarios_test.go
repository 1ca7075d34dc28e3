package differential

// pendingScenarios are filled in below.
func pendingScenarios() []scenario { return nil }
