// Package app is the vm-manager program without its main: the flags
// (Options) and Run, which wires the Node, Pod and Grant informers, the
// ExternalWorkload store and the manager to one HTTP listener, and stops
// cleanly when its context ends. Tests run it in-process.
package app
