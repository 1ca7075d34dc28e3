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

package informerhost

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// How the informers read pods and nodes from a protobuf watch.
//
// A watch event arrives as one length-delimited frame: a WatchEvent
// message whose object is the protobuf envelope of the API server
// (a 4-byte magic, then a runtime.Unknown holding the type and the
// object's own bytes). client-go's decoders copy the object's bytes
// twice on the way (into the event's RawExtension, then into the
// envelope's Raw) before the object is decoded from the second copy; on
// the initial sync of a large cluster those copies were the largest
// allocation of the scheduler (39 % of it at 150,000 pods), and the
// managed fields that the transform then drops were another tenth.
//
// The decoders below find the object inside the frame instead and decode
// pods and nodes straight from it, leaving out on the wire what the
// transform would drop (wireRule): managed fields, kubectl's
// last-applied-configuration annotation, the parts of containers,
// volumes and statuses no scheduling decision reads. Lists of pods and
// nodes (a reflector lists when the API server cannot stream the initial
// state as a watch) are slimmed item by item. Anything else
// (other kinds, a Status in an ERROR event, an envelope with a content
// encoding, bytes that do not parse) goes to client-go's decoders
// unchanged, so errors and odd objects read exactly as before.

// protobufMagic opens every protobuf envelope of the API server.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// Field numbers of the messages read here (k8s.io/apimachinery's
// generated.proto: runtime.Unknown, runtime.TypeMeta, metav1.WatchEvent,
// runtime.RawExtension, a map entry). Those of the API types come from
// their struct tags (protoNumber).
const (
	unknownTypeMeta        protowire.Number = 1
	unknownRaw             protowire.Number = 2
	unknownContentEncoding protowire.Number = 3
	typeMetaAPIVersion     protowire.Number = 1
	typeMetaKind           protowire.Number = 2
	watchEventType         protowire.Number = 1
	watchEventObject       protowire.Number = 2
	rawExtensionRaw        protowire.Number = 1
	mapEntryKey            protowire.Number = 1
)

var errMalformed = errors.New("malformed protobuf")

// NewInformerClient returns the clientset the native informers should
// list and watch through: client-go's for cfg, except that its core/v1
// client decodes the pods and nodes of protobuf watch events from the
// frame itself, and slims them and lists of them while decoding (see
// above). Give it a configuration that asks for
// protobuf; with JSON it behaves like client-go's. Its core/v1 client has
// its own rate limiter (cfg's QPS and Burst); everything else shares
// one HTTP client with the rest of the clientset.
//
// Use it for informers whose transform is StripForScheduler only: the
// pods and nodes it decodes lack what that transform drops.
func NewInformerClient(cfg *rest.Config) (kubernetes.Interface, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("informer client: building the HTTP client: %w", err)
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("informer client: %w", err)
	}
	core := rest.CopyConfig(cfg)
	gv := v1.SchemeGroupVersion
	core.GroupVersion, core.APIPath = &gv, "/api"
	core.NegotiatedSerializer = newStreamCodecs(scheme.Codecs.WithoutConversion())
	if core.UserAgent == "" {
		core.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientForConfigAndClient(core, httpClient)
	if err != nil {
		return nil, fmt.Errorf("informer client: core/v1: %w", err)
	}
	return &informerClient{Clientset: cs, core: corev1client.New(rc)}, nil
}

// informerClient is a Clientset whose CoreV1 decodes watch streams with
// streamCodecs.
type informerClient struct {
	*kubernetes.Clientset
	core *corev1client.CoreV1Client
}

func (c *informerClient) CoreV1() corev1client.CoreV1Interface { return c.core }

// streamCodecs is base with the decoders of its protobuf media type
// replaced: eventDecoder reads the frames of a watch, objectDecoder the
// objects inside them. Encoding and every other media type are base's.
type streamCodecs struct {
	runtime.NegotiatedSerializer
	infos []runtime.SerializerInfo
}

func newStreamCodecs(base runtime.NegotiatedSerializer) streamCodecs {
	infos := slices.Clone(base.SupportedMediaTypes())
	for i := range infos {
		info := &infos[i]
		if info.MediaType != runtime.ContentTypeProtobuf || info.StreamSerializer == nil {
			continue
		}
		info.Serializer = objectDecoder{Serializer: info.Serializer}
		stream := *info.StreamSerializer
		stream.Serializer = eventDecoder{Serializer: stream.Serializer}
		info.StreamSerializer = &stream
	}
	return streamCodecs{NegotiatedSerializer: base, infos: infos}
}

func (s streamCodecs) SupportedMediaTypes() []runtime.SerializerInfo { return s.infos }

// eventDecoder decodes the frames of a protobuf watch into a
// metav1.WatchEvent without copying the object: the event's Object.Raw is
// a slice of data. client-go's watch decoder decodes the object before it
// reads the next frame into the same buffer, which is the only use this
// decoder has; a caller that keeps events across frames must copy Raw.
type eventDecoder struct {
	runtime.Serializer
}

func (d eventDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	ev, ok := into.(*metav1.WatchEvent)
	if !ok {
		return d.Serializer.Decode(data, defaults, into)
	}
	typ, raw, err := parseWatchEvent(data)
	if err != nil {
		return d.Serializer.Decode(data, defaults, into)
	}
	ev.Type = watchEventTypeString(typ)
	ev.Object = runtime.RawExtension{Raw: raw}
	gvk := metav1.SchemeGroupVersion.WithKind("WatchEvent")
	return ev, &gvk, nil
}

// watchEventTypeString returns b as a string, without allocating for the
// types the API server sends.
func watchEventTypeString(b []byte) string {
	for _, t := range [...]string{"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"} {
		if string(b) == t {
			return t
		}
	}
	return string(b)
}

// parseWatchEvent returns the type and the object's bytes of the
// WatchEvent message data, both slices of data.
func parseWatchEvent(data []byte) (typ, raw []byte, err error) {
	err = forEachField(data, func(num protowire.Number, wt protowire.Type, v []byte) error {
		switch {
		case num == watchEventType && wt == protowire.BytesType:
			typ = v
		case num == watchEventObject && wt == protowire.BytesType:
			return forEachField(v, func(num protowire.Number, wt protowire.Type, v []byte) error {
				if num == rawExtensionRaw && wt == protowire.BytesType {
					raw = v
				}
				return nil
			})
		}
		return nil
	})
	return typ, raw, err
}

// objectDecoder decodes pods and nodes, and lists of them, from the
// envelope in data without copying it, leaving out what their wireRule
// does; anything else is its Serializer's.
type objectDecoder struct {
	runtime.Serializer
}

func (d objectDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if !bytes.HasPrefix(data, protobufMagic) {
		return d.Serializer.Decode(data, defaults, into)
	}
	env, err := parseEnvelope(data[len(protobufMagic):])
	if err != nil || len(env.contentEncoding) != 0 || string(env.apiVersion) != "v1" {
		return d.Serializer.Decode(data, defaults, into)
	}
	obj, rule := slimTarget(string(env.kind), into)
	if obj == nil {
		return d.Serializer.Decode(data, defaults, into)
	}
	gvk := v1.SchemeGroupVersion.WithKind(string(env.kind))
	obj.Reset()
	if err := unmarshalSlim(obj, rule, env.raw); err != nil {
		return nil, &gvk, fmt.Errorf("decoding %s: %w", gvk.Kind, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, &gvk, nil
}

// slimObject is an API object generated with its protobuf methods.
type slimObject interface {
	runtime.Object
	Reset()
	Unmarshal([]byte) error
}

// slimTarget returns the object a message of kind decodes into, into
// itself when it is one of that type, and the rule that slims it; nil for
// the kinds left to client-go's decoder, and when into is of another
// type.
func slimTarget(kind string, into runtime.Object) (slimObject, *wireRule) {
	var obj slimObject
	var rule *wireRule
	switch kind {
	case "Pod":
		obj, rule = &v1.Pod{}, podRule
	case "Node":
		obj, rule = &v1.Node{}, nodeRule
	case "PodList":
		// A list, when the API server cannot stream the initial
		// state as a watch: every item slimmed.
		obj, rule = &v1.PodList{}, podListRule
	case "NodeList":
		obj, rule = &v1.NodeList{}, nodeListRule
	default:
		return nil, nil
	}
	if into == nil {
		return obj, rule
	}
	if reflect.TypeOf(into) != reflect.TypeOf(obj) {
		return nil, nil
	}
	return into.(slimObject), rule
}

// envelope is what parseEnvelope finds in a runtime.Unknown; every field
// is a slice of its input.
type envelope struct {
	apiVersion, kind, raw, contentEncoding []byte
}

func parseEnvelope(data []byte) (envelope, error) {
	var env envelope
	err := forEachField(data, func(num protowire.Number, wt protowire.Type, v []byte) error {
		if wt != protowire.BytesType {
			return nil
		}
		switch num {
		case unknownTypeMeta:
			return forEachField(v, func(num protowire.Number, wt protowire.Type, v []byte) error {
				switch {
				case num == typeMetaAPIVersion && wt == protowire.BytesType:
					env.apiVersion = v
				case num == typeMetaKind && wt == protowire.BytesType:
					env.kind = v
				}
				return nil
			})
		case unknownRaw:
			env.raw = v
		case unknownContentEncoding:
			env.contentEncoding = v
		}
		return nil
	})
	return env, err
}

// forEachField calls fn with each field of the protobuf message data: its
// number, wire type and, for a length-delimited field, its contents
// (nil for other wire types). It stops at fn's first error, and fails on
// bytes that are not a message.
func forEachField(data []byte, fn func(num protowire.Number, wt protowire.Type, v []byte) error) error {
	return forEachSpan(data, func(num protowire.Number, wt protowire.Type, _, v []byte) error { return fn(num, wt, v) })
}

// scratchPool holds the buffers unmarshalSlim writes an object's bytes
// into when it leaves something out. The objects decoded from them copy
// every string and byte slice, so a buffer is reused as soon as the
// object is decoded.
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledScratch is the largest buffer scratchPool keeps: an
// exceptional object does not pin its size for every later one.
const maxPooledScratch = 1 << 20

// unmarshalSlim decodes obj from raw, the bytes of its message, without
// what rule leaves out.
func unmarshalSlim(obj interface{ Unmarshal([]byte) error }, rule *wireRule, raw []byte) error {
	bufp := scratchPool.Get().(*[]byte)
	defer func() {
		if cap(*bufp) <= maxPooledScratch {
			scratchPool.Put(bufp)
		}
	}()
	slim, changed, err := rule.appendFiltered((*bufp)[:0], raw)
	*bufp = slim
	if err != nil {
		return err
	}
	if !changed {
		return obj.Unmarshal(raw)
	}
	return obj.Unmarshal(slim)
}

// A wireRule says what of a protobuf message the decoder leaves out
// before the message is decoded. The rules of pods and nodes (podRule,
// nodeRule) leave out what StripForScheduler drops anyway, so that it is
// never decoded; the transform still runs on what is left and finds those
// parts already empty. TestStreamDecodingStoresWhatClientGoStores holds
// the two to the same result.
type wireRule struct {
	// keep, when not nil, are the only fields kept.
	keep map[protowire.Number]bool
	// drop are fields left out.
	drop map[protowire.Number]bool
	// inner are fields whose contents (each element's, when repeated) are
	// messages filtered by their own rule.
	inner map[protowire.Number]*wireRule
	// dropIf, when set, leaves out each length-delimited field num whose
	// contents v it reports true for.
	dropIf func(num protowire.Number, v []byte) bool
}

func (r *wireRule) leavesOut(num protowire.Number, wt protowire.Type, v []byte) bool {
	if r.keep != nil && !r.keep[num] || r.drop[num] {
		return true
	}
	return r.dropIf != nil && wt == protowire.BytesType && r.dropIf(num, v)
}

// appendFiltered appends to buf the message data without what r leaves
// out and returns it; changed reports whether anything was left out
// (when not, what it appended is data).
func (r *wireRule) appendFiltered(buf, data []byte) (_ []byte, changed bool, err error) {
	start := len(buf)
	err = forEachSpan(data, func(num protowire.Number, wt protowire.Type, span, v []byte) error {
		if r.leavesOut(num, wt, v) {
			changed = true
			return nil
		}
		inner := r.inner[num]
		if inner == nil || wt != protowire.BytesType {
			buf = append(buf, span...)
			return nil
		}
		// The tag, room for the contents' length as it was (it can only
		// shrink), then the filtered contents; the length is written
		// once known and the contents moved up if it takes fewer bytes.
		reserved := protowire.SizeVarint(uint64(len(v)))
		buf = append(buf, span[:len(span)-len(v)-reserved]...)
		lengthAt := len(buf)
		for range reserved {
			buf = append(buf, 0)
		}
		contentsAt := len(buf)
		var innerChanged bool
		var err error
		if buf, innerChanged, err = inner.appendFiltered(buf, v); err != nil {
			return err
		}
		changed = changed || innerChanged
		n := len(buf) - contentsAt
		size := protowire.SizeVarint(uint64(n))
		protowire.AppendVarint(buf[lengthAt:lengthAt], uint64(n))
		if size < reserved {
			copy(buf[lengthAt+size:], buf[contentsAt:])
			buf = buf[:len(buf)-(reserved-size)]
		}
		return nil
	})
	if err != nil {
		return buf[:start], false, err
	}
	return buf, changed, nil
}

// protoNumber returns the protobuf field number of t's Go field name,
// from its struct tag.
func protoNumber(t reflect.Type, name string) protowire.Number {
	f, ok := t.FieldByName(name)
	if !ok {
		panic(fmt.Sprintf("%s has no field %s", t, name))
	}
	parts := strings.Split(f.Tag.Get("protobuf"), ",")
	if len(parts) < 2 {
		panic(fmt.Sprintf("%s.%s has no protobuf tag", t, name))
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		panic(fmt.Sprintf("%s.%s: protobuf tag %q: %v", t, name, f.Tag.Get("protobuf"), err))
	}
	return protowire.Number(n)
}

// protoNumbers is protoNumber of each name, as a set.
func protoNumbers(t reflect.Type, names ...string) map[protowire.Number]bool {
	set := make(map[protowire.Number]bool, len(names))
	for _, name := range names {
		set[protoNumber(t, name)] = true
	}
	return set
}

// The rules of the objects the decoders read, mirroring StripForScheduler:
// what stripPod, stripNode and placementFree drop, by the same Go field
// names (keptContainerFields is shared).
var (
	podRule, nodeRule = slimRules()
	podListRule       = &wireRule{inner: map[protowire.Number]*wireRule{protoNumber(reflect.TypeFor[v1.PodList](), "Items"): podRule}}
	nodeListRule      = &wireRule{inner: map[protowire.Number]*wireRule{protoNumber(reflect.TypeFor[v1.NodeList](), "Items"): nodeRule}}
)

func slimRules() (pod, node *wireRule) {
	var (
		objectMeta = reflect.TypeFor[metav1.ObjectMeta]()
		podT       = reflect.TypeFor[v1.Pod]()
		spec       = reflect.TypeFor[v1.PodSpec]()
		status     = reflect.TypeFor[v1.PodStatus]()
		container  = reflect.TypeFor[v1.Container]()
		volume     = reflect.TypeFor[v1.Volume]()
		source     = reflect.TypeFor[v1.VolumeSource]()
		nodeT      = reflect.TypeFor[v1.Node]()
		nodeStatus = reflect.TypeFor[v1.NodeStatus]()
	)
	annotations := protoNumber(objectMeta, "Annotations")
	meta := &wireRule{
		drop: protoNumbers(objectMeta, "ManagedFields"),
		dropIf: func(num protowire.Number, v []byte) bool {
			return num == annotations && string(fieldOf(v, mapEntryKey)) == LastAppliedConfigAnnotation
		},
	}
	// placementFree, on the wire: a volume whose source is one of these.
	volumes, volumeSource := protoNumber(spec, "Volumes"), protoNumber(volume, "VolumeSource")
	free := protoNumbers(source, "Projected", "Secret", "ConfigMap", "DownwardAPI", "EmptyDir")
	slimContainer := &wireRule{keep: protoNumbers(container, keptContainerFields...)}
	pod = &wireRule{inner: map[protowire.Number]*wireRule{
		protoNumber(podT, "ObjectMeta"): meta,
		protoNumber(podT, "Spec"): {
			drop: protoNumbers(spec, "SecurityContext"),
			inner: map[protowire.Number]*wireRule{
				protoNumber(spec, "Containers"):     slimContainer,
				protoNumber(spec, "InitContainers"): slimContainer,
			},
			dropIf: func(num protowire.Number, v []byte) bool {
				return num == volumes && hasField(fieldOf(v, volumeSource), free)
			},
		},
		protoNumber(podT, "Status"): {
			drop: protoNumbers(status, "ContainerStatuses", "InitContainerStatuses", "EphemeralContainerStatuses",
				"PodIP", "PodIPs", "HostIP", "HostIPs"),
		},
	}}
	node = &wireRule{inner: map[protowire.Number]*wireRule{
		protoNumber(nodeT, "ObjectMeta"): meta,
		protoNumber(nodeT, "Status"): {
			drop: protoNumbers(nodeStatus, "Images", "Addresses", "VolumesInUse", "VolumesAttached", "Config",
				"NodeInfo", "DaemonEndpoints"),
		},
	}}
	return pod, node
}

// fieldOf returns the contents of the last length-delimited field num of
// the message v (the one a decoder keeps), nil if there is none or v does
// not parse.
func fieldOf(v []byte, num protowire.Number) []byte {
	var out []byte
	_ = forEachField(v, func(n protowire.Number, wt protowire.Type, c []byte) error {
		if n == num && wt == protowire.BytesType {
			out = c
		}
		return nil
	})
	return out
}

// hasField reports whether the message v has a field in set.
func hasField(v []byte, set map[protowire.Number]bool) bool {
	found := false
	_ = forEachField(v, func(n protowire.Number, _ protowire.Type, _ []byte) error {
		found = found || set[n]
		return nil
	})
	return found
}

// forEachSpan is forEachField that also gives fn the whole field, tag
// included.
func forEachSpan(data []byte, fn func(num protowire.Number, wt protowire.Type, span, v []byte) error) error {
	for off := 0; off < len(data); {
		num, wt, n := protowire.ConsumeTag(data[off:])
		if n < 0 {
			return fmt.Errorf("%w: field tag: %w", errMalformed, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, wt, data[off+n:])
		if m < 0 {
			return fmt.Errorf("%w: field %d: %w", errMalformed, num, protowire.ParseError(m))
		}
		var v []byte
		if wt == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(data[off+n:])
		}
		if err := fn(num, wt, data[off:off+n+m], v); err != nil {
			return err
		}
		off += n + m
	}
	return nil
}
