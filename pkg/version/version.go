// Package version reports the build's version. Release builds stamp
// gitVersion with -ldflags "-X .../pkg/version.gitVersion=v1.2.3"; other
// builds fall back to the module version Go recorded, or "devel".
package version

import "runtime/debug"

var gitVersion = ""

// Get returns the version string.
func Get() string {
	if gitVersion != "" {
		return gitVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
