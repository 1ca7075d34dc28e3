// Package config holds the internal (hub) version of the scheduler's
// configuration file API: the types every versioned form of the file
// (v1alpha1 today) converts to and from, and that validation and the rest
// of the scheduler read. See pkg/config for loading a file.
//
// Only the versioned packages are serialised; these types carry no JSON
// tags and are never written.
//
// +k8s:deepcopy-gen=package
package config
