//go:build !race

package chaos

// raceEnabled says whether the tests run with the race detector; the
// scheduler binary is then built with it too.
const raceEnabled = false
