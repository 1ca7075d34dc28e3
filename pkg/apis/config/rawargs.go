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

package config

import (
	"bytes"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RawArgs holds settings the configuration API has no type for: the args
// of an out-of-tree plugin or of a vendor's event handler, and the
// settings of a custom informer source other than the built-in http and
// file ones. They are kept as written, for the code that owns them to
// decode strictly itself (pkg/config.DecodeStrict,
// pkg/plugins/pluginutil.DecodeArgs).
//
// YAML keeps the file's line and column numbers: pkg/config cuts the
// section out of the file and precedes it with empty lines, so that a
// decoder's "line 12" is line 12 of the file named by Source.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type RawArgs struct {
	// Source names the file the settings come from; "" when they were
	// built in code.
	Source string
	// YAML is the settings, a YAML mapping (JSON is YAML too).
	YAML []byte
}

// NewRawArgs returns settings read from source, for callers that build a
// configuration in code and for tests.
func NewRawArgs(source string, yaml []byte) *RawArgs {
	return &RawArgs{Source: source, YAML: yaml}
}

// GetObjectKind implements runtime.Object: raw settings have no kind.
func (*RawArgs) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

var _ runtime.Object = &RawArgs{}

// Reader returns an unread reader over the settings that names their
// source (a Source method), so that decoding errors name the file; nil
// for nil args.
func (a *RawArgs) Reader() io.Reader {
	if a == nil {
		return nil
	}
	return &rawReader{Reader: bytes.NewReader(a.YAML), source: a.Source}
}

// rawReader is an io.Reader over RawArgs that names their file.
type rawReader struct {
	*bytes.Reader
	source string
}

// Source names the file the settings come from.
func (r *rawReader) Source() string { return r.source }

// ReaderOf returns the reader of settings that are RawArgs (see Reader),
// and nil for none or for typed settings, which need no decoding: the way
// a vendor's source reads CustomInformer.SourceArgs, as
// config.DecodeStrict(configapi.ReaderOf(ci.SourceArgs), &settings).
func ReaderOf(obj runtime.Object) io.Reader {
	if raw, ok := obj.(*RawArgs); ok {
		return raw.Reader()
	}
	return nil
}
