// Package config reads the scheduler's configuration file (--config-path):
// one YAML document with apiVersion and kind, and sections for event
// handlers, custom informers and scheduling profiles.
//
// Decoding is strict everywhere. An unknown field or a bad value is an error
// that names the field and its line in the file. Each event handler's
// section is handed to its factory as a *Section: an io.Reader over YAML
// that keeps the file's own line and column numbers, so that the factory's
// DecodeStrict reports positions a user can find in the file. The args of
// a profile's pluginConfig entries are handed to plugin factories the
// same way.
package config
