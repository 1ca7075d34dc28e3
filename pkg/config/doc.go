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

// Package config reads the scheduler's configuration file (--config-path):
// one YAML document with apiVersion and kind, and sections for event
// handlers, custom informers and scheduling profiles. It holds no
// configuration types of its own: a File's API is the internal version of
// the configuration API (pkg/apis/config), which every consumer reads.
//
// Reading is strict everywhere. The file's shape is checked node by node
// first, then it is decoded through the API's scheme (v1alpha1, defaults,
// conversion to the internal version), the args of the plugins the API
// has a type for are decoded into those types the same way, and the
// result is validated. Every problem names its field and its line in the
// file.
//
// Settings the API has no type for (an event handler's args, a custom
// informer source's, an out-of-tree plugin's) are kept as
// *config.RawArgs whose YAML keeps the file's own line and column numbers,
// so that their owner's DecodeStrict reports positions a user can find in
// the file.
package config
