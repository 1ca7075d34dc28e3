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

package defaulthandler

import (
	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// OwnerGangs says, per owner kind, whether the pods of an owner of that
// kind that name no gang explicitly are one gang: the configuration API's
// type (pkg/apis/config), whose keys are the OwnerNames of the table of
// dialects (pkg/dialects).
type OwnerGangs = configapi.OwnerGangs

// ownerKinds checks g (which an embedder may have built in code) against
// the owner kinds of table and returns the owner kinds it enables over the
// defaults. Errors name the field and the value.
func ownerKinds(g OwnerGangs, table dialects.Table) (framework.OwnerKinds, error) {
	return table.OwnerKinds(g)
}
