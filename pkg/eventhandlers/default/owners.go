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
