//go:build race

package controlplane

// RaceEnabled says whether this binary was built with the race detector.
const RaceEnabled = true
