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

package framework

// VictimFacts is what preemption's victim rules read of a job beside its
// tasks: how preemption may take its pods (Disruption), its quorum
// (MinAvailable) and whether it has sub-gangs (SubGroupRules), whose rules
// need the whole record.
type VictimFacts struct {
	Disruption   Disruption
	MinAvailable int32
	SubGangs     bool
}

// VictimFacts returns j's VictimFacts.
func (j *JobInfo) VictimFacts() VictimFacts {
	return VictimFacts{Disruption: j.Disruption(), MinAvailable: j.MinAvailable(), SubGangs: len(j.SubGroupRules()) > 0}
}
