/*
Copyright The batch-scheduler Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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
