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
	"io"
	"math/rand"
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"
	"sigs.k8s.io/randfill"
)

// protobufInfo returns the protobuf media type of codecs.
func protobufInfo(t testing.TB, codecs runtime.NegotiatedSerializer) runtime.SerializerInfo {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf media type")
	}
	return info
}

// decoders are the two ends a watch decodes with: client-go's and ours.
type decoders struct {
	base, ours runtime.SerializerInfo
}

func newDecoders(t testing.TB) decoders {
	base := scheme.Codecs.WithoutConversion()
	return decoders{base: protobufInfo(t, base), ours: protobufInfo(t, newStreamCodecs(base))}
}

// encode returns obj as the API server puts it in a watch event: its
// protobuf envelope.
func (d decoders) encode(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	var buf bytes.Buffer
	if err := d.base.Serializer.Encode(obj, &buf); err != nil {
		t.Fatalf("encoding %T: %v", obj, err)
	}
	return buf.Bytes()
}

// frames returns events as the frames of a protobuf watch stream.
func (d decoders) frames(t testing.TB, events ...watch.Event) []byte {
	t.Helper()
	var out bytes.Buffer
	w := d.base.StreamSerializer.Framer.NewFrameWriter(&out)
	for _, ev := range events {
		var frame bytes.Buffer
		we := metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: d.encode(t, ev.Object)}}
		if err := d.base.StreamSerializer.Serializer.Encode(&we, &frame); err != nil {
			t.Fatalf("encoding a watch event: %v", err)
		}
		if _, err := w.Write(frame.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

type decoded struct {
	typ watch.EventType
	obj runtime.Object
	err error
}

// readStream decodes stream as client-go's watch does, with the decoders
// of info.
func readStream(stream []byte, info runtime.SerializerInfo) []decoded {
	frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
	dec := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer),
		runtime.WithoutVersionDecoder{Decoder: info.Serializer})
	var out []decoded
	for {
		typ, obj, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			return out
		}
		out = append(out, decoded{typ, obj, err})
		if err != nil {
			return out
		}
	}
}

// stored is what the informers store of obj (StripForScheduler), objects
// the transform leaves alone as they are.
func stored(t testing.TB, obj runtime.Object) any {
	t.Helper()
	out, err := StripForScheduler(obj)
	if err != nil {
		t.Fatalf("transform of %T: %v", obj, err)
	}
	return out
}

// checkSlim fails unless obj, as our decoder produced it, lacks what its
// wireRule leaves out.
func checkSlim(t testing.TB, obj runtime.Object) {
	t.Helper()
	m := obj.(metav1.Object)
	if m.GetManagedFields() != nil {
		t.Errorf("%T %s kept its managed fields", obj, m.GetName())
	}
	if _, ok := m.GetAnnotations()[LastAppliedConfigAnnotation]; ok {
		t.Errorf("%T %s kept the last-applied annotation", obj, m.GetName())
	}
	switch o := obj.(type) {
	case *v1.Pod:
		for _, c := range append(slices.Clone(o.Spec.Containers), o.Spec.InitContainers...) {
			slim := c
			slimContainer(&slim)
			if !reflect.DeepEqual(c, slim) {
				t.Errorf("pod %s: container %q not slim", o.Name, c.Name)
			}
		}
		for _, v := range o.Spec.Volumes {
			if placementFree(&v) {
				t.Errorf("pod %s: placement-free volume %q kept", o.Name, v.Name)
			}
		}
		st := o.Status
		if o.Spec.SecurityContext != nil || st.ContainerStatuses != nil || st.InitContainerStatuses != nil ||
			st.EphemeralContainerStatuses != nil || st.PodIP != "" || st.PodIPs != nil || st.HostIP != "" || st.HostIPs != nil {
			t.Errorf("pod %s kept a security context, container statuses or IPs", o.Name)
		}
	case *v1.Node:
		st := o.Status
		if st.Images != nil || st.Addresses != nil || st.VolumesInUse != nil || st.VolumesAttached != nil || st.Config != nil ||
			st.NodeInfo != (v1.NodeSystemInfo{}) || st.DaemonEndpoints != (v1.NodeDaemonEndpoints{}) {
			t.Errorf("node %s kept a part of its status the transform drops", o.Name)
		}
	}
}

func randomFiller(seed int64) *randfill.Filler {
	return randfill.New().NilChance(0.3).NumElements(0, 3).RandSource(rand.NewSource(seed)).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewMilliQuantity(c.Int63n(1<<40), resource.DecimalSI)
		},
	)
}

// Random pods and nodes, bound and not, with and without managed fields
// and the last-applied annotation, are stored as the informers store what
// client-go decodes; ours lack what the transform drops before it runs;
// and they do not keep the bytes they were decoded from.
func TestStreamDecodingStoresWhatClientGoStores(t *testing.T) {
	d := newDecoders(t)
	f := randomFiller(1)
	for i := range 300 {
		var obj runtime.Object
		if i%3 == 2 {
			n := &v1.Node{}
			f.Fill(n)
			obj = n
		} else {
			p := &v1.Pod{}
			f.Fill(p)
			// Random volume sources are nearly all several kinds at once:
			// one of each sort the transform tells apart.
			p.Spec.Volumes = append(p.Spec.Volumes,
				v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/data"}}},
				v1.Volume{Name: "claim", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
				v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				v1.Volume{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}})
			if i%2 == 0 {
				p.Spec.NodeName = "" // pending: the transform keeps a v1.Pod
			}
			obj = p
		}
		m := obj.(metav1.Object)
		switch i % 4 {
		case 0:
			m.SetManagedFields(nil)
		case 1:
			a := m.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a[LastAppliedConfigAnnotation] = `{"kind":"Pod"}`
			m.SetAnnotations(a)
		case 2:
			m.SetAnnotations(map[string]string{LastAppliedConfigAnnotation: "{}"})
			m.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}})
		}
		data := d.encode(t, obj)
		want, _, err := runtime.WithoutVersionDecoder{Decoder: d.base.Serializer}.Decode(bytes.Clone(data), nil, nil)
		if err != nil {
			t.Fatalf("%d: client-go: %v", i, err)
		}
		got, _, err := runtime.WithoutVersionDecoder{Decoder: d.ours.Serializer}.Decode(data, nil, nil)
		if err != nil {
			t.Fatalf("%d: ours: %v", i, err)
		}
		for j := range data {
			data[j] = 0xa5
		}
		checkSlim(t, got)
		if w, g := stored(t, want), stored(t, got); !reflect.DeepEqual(g, w) {
			t.Fatalf("%d: %T stored differently (-client-go +ours):\n%s", i, w, diff.Diff(w, g))
		}
	}
}

// Lists of random pods and nodes, decoded into the list a client passes
// or into nothing, are stored item by item as from client-go's decoding;
// a list decoded into an object of another type fails as client-go's
// decoder fails.
func TestListDecodingStoresWhatClientGoStores(t *testing.T) {
	d := newDecoders(t)
	f := randomFiller(7)
	pods, nodes := &v1.PodList{}, &v1.NodeList{}
	for i := range 6 {
		p, n := &v1.Pod{}, &v1.Node{}
		f.Fill(p)
		f.Fill(n)
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
		if i%2 == 0 {
			p.Spec.NodeName = ""
		}
		pods.Items, nodes.Items = append(pods.Items, *p), append(nodes.Items, *n)
	}
	for _, c := range []struct {
		list       runtime.Object
		into, base func() runtime.Object
	}{
		{pods, func() runtime.Object { return &v1.PodList{} }, func() runtime.Object { return &v1.PodList{} }},
		{pods, func() runtime.Object { return nil }, func() runtime.Object { return nil }},
		{nodes, func() runtime.Object { return &v1.NodeList{} }, func() runtime.Object { return &v1.NodeList{} }},
	} {
		data := d.encode(t, c.list)
		want, _, err := d.base.Serializer.Decode(bytes.Clone(data), nil, c.base())
		if err != nil {
			t.Fatalf("client-go, %T: %v", c.list, err)
		}
		got, _, err := d.ours.Serializer.Decode(data, nil, c.into())
		if err != nil {
			t.Fatalf("ours, %T: %v", c.list, err)
		}
		wantItems, err := meta.ExtractList(want)
		if err != nil {
			t.Fatal(err)
		}
		gotItems, err := meta.ExtractList(got)
		if err != nil {
			t.Fatal(err)
		}
		if len(gotItems) != len(wantItems) || len(wantItems) != 6 {
			t.Fatalf("%T: %d items, client-go %d, want 6", c.list, len(gotItems), len(wantItems))
		}
		for i := range wantItems {
			checkSlim(t, gotItems[i])
			if w, g := stored(t, wantItems[i]), stored(t, gotItems[i]); !reflect.DeepEqual(g, w) {
				t.Errorf("%T item %d stored differently:\n%s", c.list, i, diff.Diff(w, g))
			}
		}
		if wm, gm := want.(metav1.ListInterface).GetResourceVersion(), got.(metav1.ListInterface).GetResourceVersion(); gm != wm {
			t.Errorf("%T: resource version %q, client-go %q", c.list, gm, wm)
		}
	}
	data := d.encode(t, pods)
	_, _, wantErr := d.base.Serializer.Decode(bytes.Clone(data), nil, &v1.Pod{})
	_, _, gotErr := d.ours.Serializer.Decode(data, nil, &v1.Pod{})
	if (wantErr == nil) != (gotErr == nil) {
		t.Errorf("a PodList into a Pod: error %v, client-go's %v", gotErr, wantErr)
	}
}

// A stream of every kind of event reads the same through both decoders:
// pods and nodes less what is never read, everything else (a Status in an
// ERROR event, a ConfigMap) as client-go decodes it.
func TestWatchStreamMatchesClientGo(t *testing.T) {
	d := newDecoders(t)
	f := randomFiller(2)
	pod, node, cm := &v1.Pod{}, &v1.Node{}, &v1.ConfigMap{}
	f.Fill(pod)
	f.Fill(node)
	f.Fill(cm)
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate}}
	bookmark := &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	status := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 1 (2)"}
	stream := d.frames(t,
		watch.Event{Type: watch.Added, Object: pod},
		watch.Event{Type: watch.Modified, Object: node},
		watch.Event{Type: watch.Bookmark, Object: bookmark},
		watch.Event{Type: watch.Added, Object: cm},
		watch.Event{Type: watch.Deleted, Object: pod},
		watch.Event{Type: watch.Error, Object: status},
	)
	want, got := readStream(stream, d.base), readStream(stream, d.ours)
	if len(want) != 6 {
		t.Fatalf("client-go decoded %d events, want 6", len(want))
	}
	if len(got) != len(want) {
		t.Fatalf("ours decoded %d events, client-go %d", len(got), len(want))
	}
	for i := range want {
		if want[i].err != nil || got[i].err != nil {
			t.Fatalf("event %d: client-go error %v, ours %v", i, want[i].err, got[i].err)
		}
		var w, g any = want[i].obj, got[i].obj
		switch g.(type) {
		case *v1.Pod, *v1.Node:
			checkSlim(t, got[i].obj)
			w, g = stored(t, want[i].obj), stored(t, got[i].obj)
		}
		if got[i].typ != want[i].typ || !reflect.DeepEqual(g, w) {
			t.Errorf("event %d: got %s %T, want %s %T:\n%s", i, got[i].typ, g, want[i].typ, w, diff.Diff(w, g))
		}
	}
	if p := got[0].obj.(*v1.Pod); p.ManagedFields != nil {
		t.Errorf("the pod kept its managed fields: %v", p.ManagedFields)
	}
}

// Cut or corrupted frames and envelopes never panic, and fail wherever
// client-go's decoders fail on the same bytes; where client-go decodes
// them, ours decode the same.
func TestDecodersOnGarbage(t *testing.T) {
	d := newDecoders(t)
	f := randomFiller(3)
	pod := &v1.Pod{}
	f.Fill(pod)
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
	envelope := d.encode(t, pod)
	stream := d.frames(t, watch.Event{Type: watch.Added, Object: pod})
	r := rand.New(rand.NewSource(4))
	var inputs [][]byte
	for n := range len(envelope) {
		inputs = append(inputs, envelope[:n])
	}
	for range 500 {
		b := bytes.Clone(envelope)
		for range 1 + r.Intn(4) {
			b[r.Intn(len(b))] = byte(r.Intn(256))
		}
		inputs = append(inputs, b)
	}
	for i, in := range inputs {
		want, _, wantErr := runtime.WithoutVersionDecoder{Decoder: d.base.Serializer}.Decode(bytes.Clone(in), nil, nil)
		got, _, gotErr := runtime.WithoutVersionDecoder{Decoder: d.ours.Serializer}.Decode(bytes.Clone(in), nil, nil)
		if wantErr != nil {
			continue // ours may or may not read what client-go rejects: the envelope's own wire types go unchecked.
		}
		if gotErr != nil {
			t.Errorf("input %d: client-go decoded it, ours failed: %v", i, gotErr)
			continue
		}
		if w, g := stored(t, want), stored(t, got); !reflect.DeepEqual(g, w) {
			t.Errorf("input %d: stored differently:\n%s", i, diff.Diff(w, g))
		}
	}
	// Whole streams cut anywhere end in an error or EOF, never a panic.
	for n := range len(stream) {
		for _, ev := range readStream(stream[:n], d.ours) {
			if ev.err == nil && ev.obj == nil {
				t.Fatalf("cut at %d: an event without object or error", n)
			}
		}
	}
}

// FuzzObjectDecoder: any bytes decode without panicking; seeded with a
// pod's envelope.
func FuzzObjectDecoder(f *testing.F) {
	d := newDecoders(f)
	pod := &v1.Pod{}
	randomFiller(5).Fill(pod)
	f.Add(d.encode(f, pod))
	f.Add(d.frames(f, watch.Event{Type: watch.Added, Object: pod}))
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _, _ = d.ours.Serializer.Decode(in, nil, nil)
		_, _, _ = d.ours.StreamSerializer.Serializer.Decode(in, nil, &metav1.WatchEvent{})
		_, _, _ = podRule.appendFiltered(nil, in)
		_, _, _ = nodeRule.appendFiltered(nil, in)
	})
}

// benchPod is a pod as a Job's controller creates it and a kubelet
// reports it running, with the managed fields both leave.
func benchPod(i int) *v1.Pod {
	fields := func(s string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: bytes.Repeat([]byte(s), 12)} }
	now := metav1.Now()
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("train-%05d-x7k2p", i), Namespace: "team-a", UID: "5a0c7d0e-2f4e-4d7b-9c1e-7f3a9b2d8e61",
			ResourceVersion: "123456", CreationTimestamp: now, GenerateName: "train-",
			Labels:          map[string]string{"batch.kubernetes.io/job-name": "train", "batch.kubernetes.io/controller-uid": "0c7d0e5a-2f4e-4d7b-9c1e-7f3a9b2d8e61", "job-name": "train"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "0c7d0e5a-2f4e-4d7b-9c1e-7f3a9b2d8e61"}},
			Finalizers:      []string{"batch.kubernetes.io/job-tracking"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: fields(`{"f:metadata":{"f:labels":{}}}`)},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now, FieldsType: "FieldsV1", Subresource: "status", FieldsV1: fields(`{"f:status":{"f:conditions":{}}}`)},
			},
		},
		Spec: v1.PodSpec{
			NodeName: fmt.Sprintf("node-%04d", i%5000), SchedulerName: "batch-scheduler", RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name: "worker", Image: "registry.example.com/train:v3", Command: []string{"python", "train.py"},
				Resources:              v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("1Gi")}},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile, ImagePullPolicy: v1.PullIfNotPresent,
			}},
			Tolerations: []v1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}},
		},
		Status: v1.PodStatus{
			Phase: v1.PodRunning, HostIP: "10.0.0.1", PodIP: "10.1.2.3", StartTime: &now, QOSClass: v1.PodQOSBurstable,
			Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: now}, {Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: now}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "worker", Ready: true, Image: "registry.example.com/train:v3", ImageID: "sha256:0f3a", ContainerID: "containerd://9b2d",
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}}}},
		},
	}
}

// BenchmarkWatchDecode decodes a stream of pod events (benchPod) with
// client-go's decoders (the baseline) and ours, and runs the informers'
// transform on each pod, as the pod informer does.
func BenchmarkWatchDecode(b *testing.B) {
	d := newDecoders(b)
	var events []watch.Event
	for i := range 100 {
		events = append(events, watch.Event{Type: watch.Modified, Object: benchPod(i)})
	}
	stream := d.frames(b, events...)
	for _, c := range []struct {
		name string
		info runtime.SerializerInfo
	}{{"client-go", d.base}, {"ours", d.ours}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(stream)))
			for b.Loop() {
				evs := readStream(stream, c.info)
				if len(evs) != len(events) || evs[len(evs)-1].err != nil {
					b.Fatalf("decoded %d events", len(evs))
				}
				for _, ev := range evs {
					if _, err := StripForScheduler(ev.obj); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
