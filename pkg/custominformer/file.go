package custominformer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
)

// FileSource is the source type that reads a static inventory: a directory
// of YAML or JSON manifests, each document one object of the informer's
// resource type. The directory is re-read when it changes.
//
// Files. The top level of the directory is read; files named *.yaml,
// *.yml or *.json (any case) are manifests. Names starting with "." and
// subdirectories are ignored, so a Kubernetes ConfigMap or Secret volume
// works: its "..data" and "..<timestamp>" entries are skipped and its
// top-level symlinks (a.yaml -> ..data/a.yaml) are followed. A symlink that
// points nowhere is skipped (the kubelet leaves one briefly while it
// removes a key). Write files atomically (a temporary hidden file renamed
// into place): a half-written file is read as it is.
//
// Documents. A file may hold at most FileMaxBytes (more is an error,
// wrapping ErrTooLarge). A YAML file may hold several documents separated
// by "---";
// empty documents are skipped. A JSON file holds one document. Each
// document must be a mapping whose apiVersion and kind are exactly the
// informer's type (batch-scheduler.io/v1alpha1 ExternalWorkload, v1 Node,
// ...), with no field unknown to that type, and a metadata.name that is a
// DNS-1123 subdomain. Grants and ExternalWorkloads must also pass
// v1alpha1.ValidateGrant and v1alpha1.ValidateExternalWorkload. Scalars
// are read as YAML 1.2 would: yes/no/on/off are strings, and so are dates.
//
// Namespaces. Node, Grant and ExternalWorkload are cluster-scoped: a
// document of those kinds must not set metadata.namespace. A Pod without a
// namespace is put in "default", as kubectl would. (A type this list does
// not know keeps whatever namespace the file gives.) An object is
// identified by namespace and name, which must be unique across the
// directory.
//
// Metadata the source manages. metadata.resourceVersion in a file is
// ignored: the source keeps the objects in a resourcemanager.Store, which
// numbers every change, so that watches resume and 410 Expired behave as
// with an apiserver (see resourcemanager.Store.ListerWatcher). An object
// without metadata.uid or metadata.creationTimestamp gets them when it
// first appears and keeps them while it exists (a UID is generated; Pods,
// for one, are told apart by UID).
//
// Changes. A re-scan reads the whole directory and compares each object
// with what the store has (semantically: "1000m" equals "1"); only real
// changes are written to the store and become ADDED, MODIFIED or DELETED
// events, in namespace/name order. If anything is wrong (a file that does
// not parse, a document of another kind, a missing name, a name defined
// twice, an unreadable or missing directory), the whole re-scan is
// rejected and the last good state stays: the error, naming each bad file
// with its document number and line, is logged (klog, with the informer's
// name) and returned by List, so an informer whose directory is bad from
// the start reports it and does not sync.
//
// When it re-scans. List re-scans before answering, and Watch before
// starting the store's watch. While a watch is open, the directory is
// watched with inotify (fsnotify) and re-scanned 100ms after a change
// notification about a manifest or a ".."-prefixed entry (a ConfigMap
// update), and in any case every pollInterval: notifications are not
// delivered on every filesystem, nor for a change behind a symlink that
// points out of the directory. Each re-scan reads and parses every
// manifest. Nothing runs between watches: the goroutine, the notification
// watcher and the poll timer belong to one watch and end with it.
const FileSource = "file"

// Defaults and limits of the file source's settings.
const (
	// DefaultFilePollInterval is how often the file source re-scans its
	// directory when pollInterval is not set.
	DefaultFilePollInterval = 5 * time.Second
	// MinFilePollInterval is the shortest pollInterval accepted.
	MinFilePollInterval = 100 * time.Millisecond
)

// fileSettleDelay is how long the file source waits after a change
// notification before re-scanning, so that a burst of changes (an editor
// saving, the kubelet swapping a ConfigMap's symlinks) is read once.
const fileSettleDelay = 100 * time.Millisecond

// fileHistoryMin is the least number of changes the file source keeps for
// watches that resume from an older resourceVersion (the store's
// HistorySize). It also keeps at least twice as many changes as it has
// objects (HistoryPerObject), so that one re-scan that changes everything
// does not force a relist.
const fileHistoryMin = 1000

// FileMaxBytes is the largest manifest file the file source reads.
const FileMaxBytes = 16 << 20

// fileErrorRelog is how often a scan error that does not change is logged
// again.
const fileErrorRelog = 5 * time.Minute

func init() {
	RegisterSource(FileSource, newFileSource)
}

// FileArgs are the settings of the file source.
type FileArgs struct {
	// Directory holds the manifests. Required; it must exist and be a
	// directory when the informer is built.
	Directory string `yaml:"directory"`
	// PollInterval is how often the directory is re-scanned while the
	// informer watches, besides re-scans on change notifications
	// (DefaultFilePollInterval if zero, at least MinFilePollInterval).
	PollInterval time.Duration `yaml:"pollInterval"`
}

// validate checks the settings and fills in defaults. Errors name the
// field.
func (a *FileArgs) validate() error {
	if a.Directory == "" {
		return errors.New("directory: required")
	}
	fi, err := os.Stat(a.Directory)
	if err != nil {
		return fmt.Errorf("directory: %s: %w", a.Directory, unwrapPathError(err))
	}
	if !fi.IsDir() {
		return fmt.Errorf("directory: %s: not a directory", a.Directory)
	}
	a.Directory = filepath.Clean(a.Directory)
	switch {
	case a.PollInterval < 0:
		return fmt.Errorf("pollInterval: must not be negative, got %s", a.PollInterval)
	case a.PollInterval == 0:
		a.PollInterval = DefaultFilePollInterval
	case a.PollInterval < MinFilePollInterval:
		return fmt.Errorf("pollInterval: must be at least %s (or unset for %s), got %s",
			MinFilePollInterval, DefaultFilePollInterval, a.PollInterval)
	}
	return nil
}

// fileScopes says, for the types a custom informer can produce, whether
// their objects live in a namespace.
var fileScopes = map[schema.GroupKind]bool{
	{Kind: "Node"}: false,
	{Kind: "Pod"}:  true,
	v1alpha1.SchemeGroupVersion.WithKind("Grant").GroupKind():            false,
	v1alpha1.SchemeGroupVersion.WithKind("ExternalWorkload").GroupKind(): false,
}

func newFileSource(_ context.Context, ci config.CustomInformer, example runtime.Object) (cache.ListerWatcher, error) {
	var args FileArgs
	if ci.SourceArgs != nil {
		if err := config.DecodeStrict(ci.SourceArgs.Clone(), &args); err != nil {
			return nil, err
		}
	}
	if err := args.validate(); err != nil {
		return nil, err
	}
	gvks, _, err := scheme.ObjectKinds(example)
	if err != nil {
		return nil, err
	}
	inv, err := newInventory(ci.Name, args, gvks[0], example)
	if err != nil {
		return nil, err
	}
	return inv, nil
}

// inventory is the ListerWatcher of one file source. The objects read
// from its directory are kept in a resourcemanager.Store, which numbers
// every change with a resourceVersion, records the recent changes for
// watches that resume, and serves lists and watches through its
// in-process ListerWatcher. Each scan diffs the directory into the store,
// writing only what changed, so that only real changes become events.
type inventory struct {
	informer string // the custom informer's name, for logs
	dir      string
	poll     time.Duration
	gvk      schema.GroupVersionKind
	example  runtime.Object
	decoder  runtime.Decoder // strict JSON
	scoped   bool            // whether objects have a namespace
	scopeSet bool            // whether scoped is known for the type

	store *resourcemanager.Store
	lw    cache.ListerWatcherWithContext // the store's

	// scanMu serializes scans, from reading the directory to writing what
	// was read into the store, so that an older reading never replaces a
	// newer one. Lists and the start of watches hold it too, so that what
	// they see of the store is the result of whole scans, never of half
	// of one. It is held during file I/O; the store's own lock is taken
	// under it (by the store's methods), never the other way round.
	scanMu   sync.Mutex
	lastErr  string    // the last scan error logged, "" after a good scan; guarded by scanMu
	loggedAt time.Time // when lastErr was logged; guarded by scanMu
}

var (
	_ cache.ListerWatcher            = &inventory{}
	_ cache.ListerWatcherWithContext = &inventory{}
)

func newInventory(informer string, args FileArgs, gvk schema.GroupVersionKind, example runtime.Object) (*inventory, error) {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	store, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind: gvk,
		Resource:         plural.Resource,
		Example:          example,
		HistorySize:      fileHistoryMin,
		HistoryPerObject: 2,
		// A watch falls this far behind only if one scan changes more
		// objects while its consumer is busy; it then ends and the
		// consumer resumes from the history.
		WatcherBuffer: fileHistoryMin,
	})
	if err != nil {
		return nil, fmt.Errorf("inventory store: %w", err)
	}
	lw, err := store.ListerWatcher(scheme)
	if err != nil {
		return nil, fmt.Errorf("inventory store: %w", err)
	}
	scoped, known := fileScopes[gvk.GroupKind()]
	return &inventory{
		informer: informer,
		dir:      args.Directory,
		poll:     args.PollInterval,
		gvk:      gvk,
		example:  example.DeepCopyObject(),
		decoder: jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme, scheme,
			jsonserializer.SerializerOptions{Strict: true}),
		scoped:   scoped,
		scopeSet: known,
		store:    store,
		lw:       cache.ToListerWatcherWithContext(lw),
	}, nil
}

// IsWatchListSemanticsUnSupported tells client-go's reflector that this
// source cannot stream lists (sendInitialEvents).
func (*inventory) IsWatchListSemanticsUnSupported() bool { return true }

// List implements cache.Lister.
func (inv *inventory) List(opts metav1.ListOptions) (runtime.Object, error) {
	return inv.ListWithContext(context.Background(), opts)
}

// ListWithContext re-scans the directory and returns the objects, sorted
// by namespace/name, at the resulting resourceVersion. If the scan fails,
// so does the list, and the state is unchanged.
func (inv *inventory) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	inv.scanMu.Lock()
	defer inv.scanMu.Unlock()
	if err := inv.scanLocked(); err != nil {
		return nil, err
	}
	return inv.lw.ListWithContext(ctx, opts)
}

// Watch implements cache.Watcher.
func (inv *inventory) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return inv.WatchWithContext(context.Background(), opts)
}

// WatchWithContext re-scans the directory and starts a watch of the
// store, with the store's rules (resourcemanager.Store.ListerWatcher):
// from resourceVersion "" or "0" it begins with synthetic ADDED events for
// the current state; from N it delivers every change after N, or, if some
// are no longer recorded (or N was never issued), a single ERROR event of
// reason Expired (410), as kube-apiserver does. TimeoutSeconds ends it
// cleanly and AllowWatchBookmarks gets periodic bookmarks; selectors are
// not supported (and not needed by informers). An invalid resourceVersion
// or timeoutSeconds is a BadRequest error. Until the watch is stopped, ctx
// is done, it times out or the store's watch ends, its goroutine runs the
// directory's change notifications and polling, re-scanning into the
// store, and forwards the store's events.
func (inv *inventory) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	// Watch the directory first, then scan: a change made in between is
	// seen by the scan, and any later one is notified.
	n := inv.newNotifier()
	inv.scanMu.Lock()
	_ = inv.scanLocked() // logged; the last good state stays
	inner, err := inv.lw.WatchWithContext(ctx, opts)
	inv.scanMu.Unlock()
	if err != nil {
		n.close()
		return nil, err
	}
	w := &fileWatch{
		inv:    inv,
		inner:  inner,
		done:   ctx.Done(),
		result: make(chan watch.Event),
		stop:   make(chan struct{}),
	}
	var timeout time.Duration
	if ts := opts.TimeoutSeconds; ts != nil { // not negative: the store accepted it
		timeout = time.Duration(*ts) * time.Second
	}
	go w.run(n, timeout)
	return w, nil
}

// scan reads the directory and writes what changed into the store. On
// error the store is unchanged; the error is logged (once while it stays
// the same, and again every fileErrorRelog) and returned.
func (inv *inventory) scan() error {
	inv.scanMu.Lock()
	defer inv.scanMu.Unlock()
	return inv.scanLocked()
}

// scanLocked is scan; inv.scanMu must be held.
func (inv *inventory) scanLocked() error {
	desired, err := inv.read()
	if err != nil {
		if msg := err.Error(); msg != inv.lastErr || time.Since(inv.loggedAt) >= fileErrorRelog {
			klog.ErrorS(err, "Rejected the inventory directory; keeping the last good state",
				"informer", inv.informer, "directory", inv.dir)
			inv.lastErr, inv.loggedAt = msg, time.Now()
		}
		return err
	}
	if inv.lastErr != "" {
		klog.InfoS("Inventory directory is valid again", "informer", inv.informer, "directory", inv.dir)
		inv.lastErr = ""
	}
	added, updated, deleted, err := inv.apply(desired)
	if err != nil {
		err = fmt.Errorf("inventory directory %s: %w", inv.dir, err)
		klog.ErrorS(err, "Could not record the inventory directory's changes", "informer", inv.informer,
			"directory", inv.dir, "added", added, "updated", updated, "deleted", deleted)
		return err
	}
	if added+updated+deleted > 0 {
		klog.V(2).InfoS("Inventory directory changed", "informer", inv.informer, "directory", inv.dir,
			"added", added, "updated", updated, "deleted", deleted, "resourceVersion", inv.store.ResourceVersion())
	}
	return nil
}

// apply makes the store hold what desired (objects by key, owned by the
// callee) holds, writing, in key order, only the objects that changed. A
// new object gets a UID and a creationTimestamp unless the file gives
// them; a changed one keeps the stored object's unless the file gives
// them. inv.scanMu must be held: nothing else writes to the store.
func (inv *inventory) apply(desired map[string]runtime.Object) (added, updated, deleted int, err error) {
	objs, _ := inv.store.List("")
	current := make(map[string]runtime.Object, len(objs)) // the store's copies
	keys := make([]string, 0, len(desired)+len(objs))
	for k := range desired {
		keys = append(keys, k)
	}
	for _, o := range objs {
		m := mustMeta(o)
		k := m.GetNamespace() + "/" + m.GetName()
		current[k] = o
		if _, ok := desired[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	now := metav1.Now().Rfc3339Copy()
	for _, k := range keys {
		old, had := current[k]
		obj, want := desired[k]
		switch {
		case !want:
			om := mustMeta(old)
			if err := inv.store.Delete(om.GetNamespace(), om.GetName()); err != nil {
				return added, updated, deleted, fmt.Errorf("deleting %s %s: %w", inv.gvk.Kind, objectName(om), err)
			}
			deleted++
		case !had:
			m := mustMeta(obj)
			if m.GetUID() == "" {
				m.SetUID(uuid.NewUUID())
			}
			if ts := m.GetCreationTimestamp(); ts.IsZero() {
				m.SetCreationTimestamp(now)
			}
			if err := inv.store.Create(obj); err != nil {
				return added, updated, deleted, fmt.Errorf("adding %s %s: %w", inv.gvk.Kind, objectName(m), err)
			}
			added++
		default:
			m, om := mustMeta(obj), mustMeta(old)
			if m.GetUID() == "" {
				m.SetUID(om.GetUID())
			}
			if ts := m.GetCreationTimestamp(); ts.IsZero() {
				m.SetCreationTimestamp(om.GetCreationTimestamp())
			}
			// The store's resourceVersion makes the update conditional
			// (it cannot conflict: nothing else writes), and takes it out
			// of the comparison; so does clearing the apiVersion and kind
			// the store sets on what it keeps.
			m.SetResourceVersion(om.GetResourceVersion())
			old.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			if equality.Semantic.DeepEqual(old, obj) {
				continue
			}
			if err := inv.store.Update(obj); err != nil {
				return added, updated, deleted, fmt.Errorf("updating %s %s: %w", inv.gvk.Kind, objectName(m), err)
			}
			updated++
		}
	}
	return added, updated, deleted, nil
}

func mustMeta(o runtime.Object) metav1.Object {
	m, err := meta.Accessor(o)
	if err != nil {
		panic(err) // every object is of a registered API type
	}
	return m
}

// scanError lists what is wrong with the directory's contents. Each
// problem names a file of the directory.
type scanError struct {
	dir      string
	problems []error
}

// scanErrorMax is how many problems a scanError spells out.
const scanErrorMax = 10

func (e *scanError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "inventory directory %s: ", e.dir)
	for i, p := range e.problems {
		if i == scanErrorMax {
			fmt.Fprintf(&b, "; and %d more", len(e.problems)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

func (e *scanError) Unwrap() []error { return e.problems }

// read reads every manifest of the directory and returns its objects by
// namespace/name, or everything that is wrong with them.
func (inv *inventory) read() (map[string]runtime.Object, error) {
	entries, err := os.ReadDir(inv.dir)
	if err != nil {
		return nil, fmt.Errorf("inventory directory %s: %w", inv.dir, unwrapPathError(err))
	}
	s := &dirReading{inv: inv, objects: map[string]runtime.Object{}, where: map[string]string{}}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !isManifestName(name) {
			continue
		}
		data, ok, err := readManifest(filepath.Join(inv.dir, name), e)
		switch {
		case err != nil:
			s.problems = append(s.problems, fmt.Errorf("%s: %w", name, err))
		case ok:
			s.file(name, data)
		}
	}
	if len(s.problems) > 0 {
		return nil, &scanError{dir: inv.dir, problems: s.problems}
	}
	return s.objects, nil
}

func isManifestName(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// readManifest returns the contents of the directory entry at path, or
// false for an entry that is not a manifest file after all: a directory,
// something that is not a regular file, a symlink that points nowhere or
// a file that went away meanwhile.
func readManifest(path string, e fs.DirEntry) ([]byte, bool, error) {
	if e.IsDir() {
		return nil, false, nil
	}
	fi, err := os.Stat(path) // follows symlinks
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, unwrapPathError(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, false, nil
	}
	if fi.Size() > FileMaxBytes {
		return nil, false, fmt.Errorf("%d bytes, more than %d: %w", fi.Size(), FileMaxBytes, ErrTooLarge)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, unwrapPathError(err)
	}
	defer f.Close()
	// It may have grown since.
	data, err := io.ReadAll(io.LimitReader(f, FileMaxBytes+1))
	if err != nil {
		return nil, false, unwrapPathError(err)
	}
	if len(data) > FileMaxBytes {
		return nil, false, fmt.Errorf("more than %d bytes: %w", FileMaxBytes, ErrTooLarge)
	}
	return data, true, nil
}

// dirReading collects the objects of one scan and its problems.
type dirReading struct {
	inv      *inventory
	objects  map[string]runtime.Object
	where    map[string]string // key -> "file: document N (line L)"
	problems []error
}

// file parses the documents of one manifest file; name is its name in
// the directory.
func (s *dirReading) file(name string, data []byte) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 1; ; i++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			// The parser cannot go on past a syntax error.
			s.problems = append(s.problems, fmt.Errorf("%s: document %d: %w", name, i, yamlError{err}))
			return
		}
		if len(doc.Content) == 0 {
			continue
		}
		n := doc.Content[0]
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			continue // an empty document
		}
		where := fmt.Sprintf("%s: document %d (line %d)", name, i, n.Line)
		obj, err := s.inv.decode(n)
		if err != nil {
			s.problems = append(s.problems, fmt.Errorf("%s: %w", where, err))
			continue
		}
		m := mustMeta(obj)
		key := m.GetNamespace() + "/" + m.GetName()
		if prev, dup := s.where[key]; dup {
			s.problems = append(s.problems, fmt.Errorf("%s: %s %s is already defined at %s",
				where, s.inv.gvk.Kind, objectName(m), prev))
			continue
		}
		s.where[key] = where
		s.objects[key] = obj
	}
}

func objectName(m metav1.Object) string {
	if m.GetNamespace() == "" {
		return strconv.Quote(m.GetName())
	}
	return strconv.Quote(m.GetNamespace() + "/" + m.GetName())
}

// yamlError is a YAML error on one line.
type yamlError struct{ err error }

func (e yamlError) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), "yaml: ")
	var te *yaml.TypeError
	if errors.As(e.err, &te) {
		msg = strings.Join(te.Errors, "; ")
	}
	return msg
}

func (e yamlError) Unwrap() error { return e.err }

var (
	// strictFieldRE matches a strict decoding error; group 2 is the path.
	strictFieldRE = regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`)
	// typeErrorRE matches a JSON type error; group 1 is the path.
	typeErrorRE = regexp.MustCompile(`Go struct field [A-Za-z0-9_]+\.(\S+) of type`)
)

// fieldError is a decoding error told with the lines of the fields it is
// about.
type fieldError struct {
	msg string
	err error
}

func (e *fieldError) Error() string { return e.msg }
func (e *fieldError) Unwrap() error { return e.err }

// locateFieldErrors adds to a decoding error of the document n the lines
// of the fields it names, where it names them in a way we know.
func locateFieldErrors(n *yaml.Node, err error) error {
	if se, ok := runtime.AsStrictDecodingError(err); ok {
		type located struct {
			line int
			msg  string
		}
		var all []located
		for _, e := range se.Errors() {
			l := located{msg: e.Error()}
			if m := strictFieldRE.FindStringSubmatch(l.msg); m != nil {
				if l.line = fieldLine(n, m[2]); l.line > 0 {
					l.msg = fmt.Sprintf("line %d: %s", l.line, l.msg)
				}
			}
			all = append(all, l)
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].line < all[j].line })
		msgs := make([]string, len(all))
		for i, l := range all {
			msgs[i] = l.msg
		}
		return &fieldError{msg: strings.Join(msgs, "; "), err: err}
	}
	if m := typeErrorRE.FindStringSubmatch(err.Error()); m != nil {
		if line := fieldLine(n, m[1]); line > 0 {
			return &fieldError{msg: fmt.Sprintf("line %d: %s", line, err), err: err}
		}
	}
	return err
}

// decode turns one document into an object of the inventory's type, with
// its resourceVersion and apiVersion/kind cleared, and checks it.
func (inv *inventory) decode(n *yaml.Node) (runtime.Object, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a mapping: want a %s object", inv.gvk.Kind)
	}
	retagTimestamps(n)
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, yamlError{err}
	}
	v, err := jsonable(v)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a mapping: want a %s object", inv.gvk.Kind)
	}
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	if apiVersion != inv.gvk.GroupVersion().String() || kind != inv.gvk.Kind {
		return nil, fmt.Errorf("apiVersion %q and kind %q: want apiVersion %q and kind %q",
			apiVersion, kind, inv.gvk.GroupVersion().String(), inv.gvk.Kind)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("converting to JSON: %w", err)
	}
	obj := inv.example.DeepCopyObject()
	if _, _, err := inv.decoder.Decode(data, nil, obj); err != nil {
		return nil, locateFieldErrors(n, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	om := mustMeta(obj)
	om.SetResourceVersion("")
	if err := inv.checkMeta(om); err != nil {
		return nil, err
	}
	if err := validateInventoryObject(obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// checkMeta checks the name and namespace, defaulting the namespace of a
// namespaced type.
func (inv *inventory) checkMeta(m metav1.Object) error {
	if m.GetName() == "" {
		return errors.New("metadata.name: required")
	}
	if msgs := validation.IsDNS1123Subdomain(m.GetName()); len(msgs) > 0 {
		return fmt.Errorf("metadata.name %q: %s", m.GetName(), strings.Join(msgs, "; "))
	}
	ns := m.GetNamespace()
	switch {
	case inv.scopeSet && !inv.scoped && ns != "":
		return fmt.Errorf("metadata.namespace %q: must not be set, %s is cluster-scoped", ns, inv.gvk.Kind)
	case inv.scopeSet && inv.scoped && ns == "":
		m.SetNamespace(metav1.NamespaceDefault)
	case ns != "":
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			return fmt.Errorf("metadata.namespace %q: %s", ns, strings.Join(msgs, "; "))
		}
	}
	return nil
}

// validateInventoryObject runs the API's own validation, for the types
// that have one here.
func validateInventoryObject(obj runtime.Object) error {
	switch o := obj.(type) {
	case *v1alpha1.Grant:
		return v1alpha1.ValidateGrant(o).ToAggregate()
	case *v1alpha1.ExternalWorkload:
		return v1alpha1.ValidateExternalWorkload(o).ToAggregate()
	}
	return nil
}

// retagTimestamps makes plain scalars that YAML would read as timestamps
// strings: API types hold dates as strings, and decoding them into
// time.Time would rewrite them.
func retagTimestamps(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!timestamp" {
		n.Tag = "!!str"
	}
	for _, c := range n.Content {
		retagTimestamps(c)
	}
}

// jsonable converts what yaml.v3 decodes into something encoding/json
// encodes: mappings with non-string keys get string keys.
func jsonable(v any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			c, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			t[k] = c
		}
		return t, nil
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			var ks string
			switch kt := k.(type) {
			case string:
				ks = kt
			case bool, int, int64, uint64, float64:
				ks = fmt.Sprint(kt)
			default:
				return nil, fmt.Errorf("mapping key %v: must be a string", k)
			}
			c, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			out[ks] = c
		}
		return out, nil
	case []any:
		for i, e := range t {
			c, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			t[i] = c
		}
		return t, nil
	}
	return v, nil
}

// fieldLine returns the line of the field at path ("spec.taints[0].efect",
// as in strict decoding errors) in mapping n, or 0 if it is not found.
func fieldLine(n *yaml.Node, path string) int {
	line := 0
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return 0
		}
		var found *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				line, found = n.Content[i].Line, n.Content[i+1]
			}
		}
		if found == nil {
			return 0
		}
		n = found
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(idx)
			if n.Kind == yaml.AliasNode && n.Alias != nil {
				n = n.Alias
			}
			if !ok || err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return 0
			}
			n, line = n.Content[i], n.Content[i].Line
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return line
}

// fileWatch is one watch on an inventory: the store's watch (inner), fed
// by re-scans. Its goroutine (run) owns the change notifications and the
// poll timer, re-scans into the store and forwards the store's events.
type fileWatch struct {
	inv    *inventory
	inner  watch.Interface // the store's watch
	done   <-chan struct{} // of the context the watch was started with
	result chan watch.Event
	stop   chan struct{}
	once   sync.Once

	timeoutC <-chan time.Time // set by run before use
}

// Stop ends the watch; the result channel is closed once the goroutine
// has released the notification watcher and stopped the store's watch. It
// may be called more than once, from any goroutine.
func (w *fileWatch) Stop() { w.once.Do(func() { close(w.stop) }) }

// ResultChan returns the channel the events arrive on.
func (w *fileWatch) ResultChan() <-chan watch.Event { return w.result }

// run forwards the store's events, re-scanning the directory into the
// store on notifications and every poll interval, until the watch ends:
// it is stopped, its context is done, it times out (timeout > 0) or the
// store's watch ends (it timed out too, fell behind, or delivered an
// Expired error).
func (w *fileWatch) run(n *notifier, timeout time.Duration) {
	defer close(w.result)
	defer w.inner.Stop()
	defer n.close()
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		w.timeoutC = t.C
	}
	poll := time.NewTicker(w.inv.poll)
	defer poll.Stop()
	var settle *time.Timer
	defer func() {
		if settle != nil {
			settle.Stop()
		}
	}()
	var settleC <-chan time.Time

	events := w.inner.ResultChan()
	for {
		rescan := false
		select {
		case e, ok := <-events:
			if !ok {
				return
			}
			if !w.send(e) {
				return
			}
		case ev, ok := <-n.events():
			if !ok {
				n.lost()
			} else if settleC == nil && n.relevant(ev) {
				settle = time.NewTimer(fileSettleDelay)
				settleC = settle.C
			}
		case err, ok := <-n.errors():
			if !ok {
				n.lost()
				break
			}
			// Typically an overflowed event queue: changes were missed.
			klog.V(2).InfoS("Change notification error; re-scanning", "informer", w.inv.informer,
				"directory", w.inv.dir, "err", err)
			rescan = true
		case <-settleC:
			settleC = nil
			rescan = true
		case <-poll.C:
			rescan = true
		case <-w.timeoutC:
			return
		case <-w.stop:
			return
		case <-w.done:
			return
		}
		if rescan {
			n.ensure()
			_ = w.inv.scan() // logged; the last good state stays
		}
	}
}

// send delivers e unless the watch ends first; false means it ended.
func (w *fileWatch) send(e watch.Event) bool {
	select {
	case w.result <- e:
		return true
	case <-w.timeoutC:
	case <-w.stop:
	case <-w.done:
	}
	return false
}

// notifier asks the kernel, through fsnotify, to report changes in the
// inventory directory. It belongs to one watch goroutine and is not safe
// for concurrent use. Without a watcher (the system refused one) it
// reports nothing, and polling alone finds changes.
type notifier struct {
	inv     *inventory
	w       *fsnotify.Watcher
	watched os.FileInfo // the directory as it was when watched; nil when not watched
}

func (inv *inventory) newNotifier() *notifier {
	n := &notifier{inv: inv}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		klog.ErrorS(err, "Cannot get change notifications; finding changes by polling only",
			"informer", inv.informer, "directory", inv.dir, "pollInterval", inv.poll)
		return n
	}
	n.w = w
	n.ensure()
	return n
}

// ensure watches the directory now at the inventory's path: it may have
// been removed, or replaced by another one, since it was last watched.
func (n *notifier) ensure() {
	if n.w == nil {
		return
	}
	fi, err := os.Stat(n.inv.dir)
	if err == nil && n.watched != nil && os.SameFile(fi, n.watched) {
		return
	}
	if n.watched != nil {
		_ = n.w.Remove(n.inv.dir) // fails if the kernel already dropped it
		n.watched = nil
	}
	if err != nil {
		return // scanning reports it
	}
	if err := n.w.Add(n.inv.dir); err != nil {
		klog.V(2).InfoS("Cannot watch the inventory directory; polling", "informer", n.inv.informer,
			"directory", n.inv.dir, "err", err)
		return
	}
	n.watched = fi
}

// relevant tells whether ev may change what a scan reads: it is about the
// directory itself, a manifest, or a ".."-prefixed entry (the kubelet's
// "..data" symlink and data directories). Other hidden files, such as an
// editor's or a tool's temporary files, are not read.
func (n *notifier) relevant(ev fsnotify.Event) bool {
	if filepath.Clean(ev.Name) == n.inv.dir {
		return true
	}
	base := filepath.Base(ev.Name)
	return strings.HasPrefix(base, "..") || (!strings.HasPrefix(base, ".") && isManifestName(base))
}

func (n *notifier) events() <-chan fsnotify.Event {
	if n.w == nil {
		return nil
	}
	return n.w.Events
}

func (n *notifier) errors() <-chan error {
	if n.w == nil {
		return nil
	}
	return n.w.Errors
}

// lost handles the watcher's channels closing: it gives up notifications.
func (n *notifier) lost() {
	n.close()
	klog.ErrorS(nil, "Change notifications ended; finding changes by polling only",
		"informer", n.inv.informer, "directory", n.inv.dir)
}

// close releases the watcher; it waits for fsnotify's goroutine to end.
func (n *notifier) close() {
	if n.w != nil {
		_ = n.w.Close()
		n.w = nil
	}
}
