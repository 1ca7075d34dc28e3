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

package manager

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// State keeps the manager's VMs across restarts of its process: a real VM
// keeps running when its manager dies, so a restarted manager must know it.
//
// Save replaces what was saved with vms, in the order given (the order in
// which pending VMs are retried); it returns only once they are durable.
// Load returns what was last saved, validated: every VM named once, with
// valid quantities, a known phase, a host exactly when Running. It returns
// no VMs and no error when nothing was ever saved. The manager calls Save
// with its lock held, and never two calls at once.
type State interface {
	Load() ([]VM, error)
	Save(vms []VM) error
}

// FileState is a State in one JSON file (the --state-file flag). Save
// writes a temporary file in the same directory, syncs it, renames it over
// Path and syncs the directory, so that a crash leaves either the old or
// the new content. Load is strict: an unknown field or a bad value is an
// error naming the file and the field.
type FileState struct {
	Path string
}

var _ State = FileState{}

// stateVersion is the version of the state file's format.
const stateVersion = 1

// stateFile is the state file's content.
type stateFile struct {
	// Version is stateVersion.
	Version int `json:"version"`
	// VMs are the VMs in the order they were created.
	VMs []stateVM `json:"vms"`
}

// stateVM is one VM in the state file. Every field is a string, parsed
// and checked by Load, so that an error names the field it is about.
type stateVM struct {
	Name          string `json:"name"`
	CPU           string `json:"cpu"`
	Memory        string `json:"memory"`
	RequestedHost string `json:"requestedHost,omitempty"`
	Host          string `json:"host,omitempty"`
	Phase         string `json:"phase"`
	// Created and Placed are RFC 3339 times with nanoseconds; Placed is
	// set exactly when Phase is Running.
	Created string `json:"created"`
	Placed  string `json:"placed,omitempty"`
}

// Load reads the file; a missing file means no VMs.
func (f FileState) Load() ([]VM, error) {
	data, err := os.ReadFile(f.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("state file %s: %w", f.Path, err)
	}
	vms, err := decodeState(data)
	if err != nil {
		return nil, fmt.Errorf("state file %s: %w", f.Path, err)
	}
	return vms, nil
}

// Save writes vms to the file durably.
func (f FileState) Save(vms []VM) error {
	s := stateFile{Version: stateVersion, VMs: make([]stateVM, len(vms))}
	for i, v := range vms {
		s.VMs[i] = stateVM{Name: v.Name, CPU: v.CPU.String(), Memory: v.Memory.String(), RequestedHost: v.RequestedHost,
			Host: v.Host, Phase: string(v.Phase), Created: v.Created.UTC().Format(time.RFC3339Nano)}
		if v.Placed != nil {
			s.VMs[i].Placed = v.Placed.UTC().Format(time.RFC3339Nano)
		}
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("state file %s: encoding: %w", f.Path, err)
	}
	if err := writeDurably(f.Path, append(data, '\n')); err != nil {
		return fmt.Errorf("state file %s: %w", f.Path, err)
	}
	return nil
}

// writeDurably replaces path with data: a temporary file in the same
// directory, synced, renamed over path, and the directory synced.
func writeDurably(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr = d.Sync()
	cerr = d.Close()
	return errors.Join(serr, cerr)
}

// decodeState parses and checks a state file's content. Errors name the
// field at fault, e.g. "vms[2].cpu: ...".
func decodeState(data []byte) ([]VM, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty; want a JSON object with version and vms")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s stateFile
	if err := dec.Decode(&s); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return nil, fmt.Errorf("%s: a JSON %s where %s belongs", typeErr.Field, typeErr.Value, jsonKind(typeErr.Type))
		}
		return nil, fmt.Errorf("not a JSON object of version and vms: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON object")
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("version: %d is not supported; want %d", s.Version, stateVersion)
	}
	out := make([]VM, 0, len(s.VMs))
	names := map[string]int{}
	for i, sv := range s.VMs {
		v, err := sv.decode()
		if err != nil {
			return nil, fmt.Errorf("vms[%d].%w", i, err)
		}
		if j, dup := names[v.Name]; dup {
			return nil, fmt.Errorf("vms[%d].name: %q is also vms[%d]", i, v.Name, j)
		}
		names[v.Name] = i
		out = append(out, v)
	}
	return out, nil
}

// decode checks one VM of the file. The error starts with the field name.
func (sv stateVM) decode() (VM, error) {
	cpu, memory, err := CreateRequest{Name: sv.Name, CPU: sv.CPU, Memory: sv.Memory, Host: sv.RequestedHost}.validate()
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) && fe.Field == "host" {
			fe = &FieldError{Field: "requestedHost", Message: fe.Message}
			err = fe
		}
		return VM{}, err
	}
	v := VM{Name: sv.Name, CPU: cpu, Memory: memory, RequestedHost: sv.RequestedHost, Host: sv.Host, Phase: Phase(sv.Phase)}
	created, err := time.Parse(time.RFC3339Nano, sv.Created)
	if err != nil {
		return VM{}, &FieldError{"created", fmt.Sprintf("%q is not an RFC 3339 time", sv.Created)}
	}
	v.Created = metav1.NewTime(created)
	switch v.Phase {
	case PhaseRunning:
		if sv.Host == "" {
			return VM{}, &FieldError{"host", "required for a Running VM"}
		}
		if errs := validation.IsDNS1123Subdomain(sv.Host); len(errs) > 0 {
			return VM{}, &FieldError{"host", fmt.Sprintf("%q: %s", sv.Host, errs[0])}
		}
		placed, err := time.Parse(time.RFC3339Nano, sv.Placed)
		if err != nil {
			return VM{}, &FieldError{"placed", fmt.Sprintf("%q is not an RFC 3339 time (required for a Running VM)", sv.Placed)}
		}
		p := metav1.NewTime(placed)
		v.Placed = &p
	case PhasePending:
		if sv.Host != "" {
			return VM{}, &FieldError{"host", fmt.Sprintf("%q given for a Pending VM, which has none", sv.Host)}
		}
		if sv.Placed != "" {
			return VM{}, &FieldError{"placed", "given for a Pending VM, which was not placed"}
		}
	default:
		return VM{}, &FieldError{"phase", fmt.Sprintf("%q is neither %s nor %s", sv.Phase, PhasePending, PhaseRunning)}
	}
	return v, nil
}

// jsonKind names what a Go type holds in JSON terms, for error messages.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Bool:
		return "true or false"
	}
	return "another value"
}
