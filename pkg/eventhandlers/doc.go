// Package eventhandlers is the contract between the scheduler cache and the
// code that turns informer events into cache state: the event handler.
//
// It defines
//   - Interface, the handler, composed of one small interface per resource
//     (PodEventHandler, NodeEventHandler, ...), plus optional interfaces
//     (DynamicResourceRequester, Runner) found by type assertion;
//   - Cache, the narrow API of the scheduler cache that handlers call;
//   - ClusterEvent and ActionType, which say what changed so that waiting
//     work is retried only when it may now fit;
//   - Factory and the registry that picks a handler by name at start-up
//     (--event-handler).
//
// pkg/cache implements Cache, runs the informers and dispatches every event
// to one Interface. This package imports neither pkg/cache nor any handler,
// so handlers (the default one in pkg/eventhandlers/default, or a vendor's)
// depend only on it.
//
// A vendor handler usually embeds the default handler and overrides what it
// changes:
//
//	type handler struct {
//		*defaulthandler.Handler
//	}
//
//	func (h *handler) AddNode(obj any) {
//		// vendor logic, then maybe h.Handler.AddNode(obj)
//	}
//
//	func init() {
//		eventhandlers.RegisterEventHandler("acme", func(ctx context.Context, c eventhandlers.Cache, cfg io.Reader, rc *rest.Config) (eventhandlers.Interface, error) {
//			base, err := defaulthandler.New(ctx, c, cfg, rc)
//			if err != nil {
//				return nil, err
//			}
//			return &handler{Handler: base}, nil
//		})
//	}
//
// and is selected with --event-handler=acme in a binary built with
// app.NewSchedulerCommand(app.WithEventHandler("acme", factory)) or simply
// by importing the package for its init().
package eventhandlers
