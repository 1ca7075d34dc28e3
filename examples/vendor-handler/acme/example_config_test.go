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

package acme_test

import (
	"testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"

	"example.com/acme-scheduler/acme"
)

// The sample configuration next to go.mod loads and builds the handler,
// as the command does with --config-path=acme.yaml.
func TestSampleConfig(t *testing.T) {
	f, err := config.Load("../acme.yaml")
	if err != nil {
		t.Fatalf("loading ../acme.yaml: %v", err)
	}
	section := f.HandlerArgs(acme.Name)
	if section == nil {
		t.Fatal("../acme.yaml has no args for the acme handler")
	}
	if _, err := acme.Factory(t.Context(), newMemCache(), section, nil); err != nil {
		t.Fatalf("building the handler from ../acme.yaml: %v", err)
	}
}
