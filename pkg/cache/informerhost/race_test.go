//go:build race

package informerhost

// The test binary is built with -race: TestStrippedFieldsUnread then asks
// go list for the export data of the same build, which is cached.
func init() { raceEnabled = true }
