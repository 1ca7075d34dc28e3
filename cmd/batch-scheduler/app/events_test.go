package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr/funcr"
)

func TestCancelledEventWritesAreCountedNotLogged(t *testing.T) {
	var logged []string
	base := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	var n atomic.Int64
	logger := base.WithSink(newCancelledFilter(base.GetSink(), &n)).WithValues("k", "v").WithName("events")

	logger.Error(fmt.Errorf("writing event: %w", context.Canceled), "Unable to write event")
	logger.Error(context.Canceled, "Unable to write event")
	logger.Error(errors.New("the server is on fire"), "Unable to write event")
	logger.Info("unrelated")

	if n.Load() != 2 {
		t.Errorf("cancelled writes counted = %d, want 2", n.Load())
	}
	if len(logged) != 2 || !strings.Contains(logged[0], "on fire") || !strings.Contains(logged[0], `"k"="v"`) {
		t.Errorf("logged %q; want the other error (with the logger's values) and the info line", logged)
	}
}
