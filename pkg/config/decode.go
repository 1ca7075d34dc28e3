package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// DecodeStrict decodes the YAML in r into out. Every field of the input must
// exist in out (an unknown or misspelled field is an error), and the input
// must hold at most one document. A nil r, or one with no content, leaves
// out untouched and is not an error, so callers set defaults first.
//
// When r is a *Section, errors name the file, and their line numbers are
// the file's own.
func DecodeStrict(r io.Reader, out any) error {
	if r == nil {
		return nil
	}
	src := ""
	if s, ok := r.(interface{ Source() string }); ok {
		src = s.Source()
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return wrapSource(src, fmt.Errorf("reading: %w", err))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return wrapSource(src, flattenYAMLError(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return wrapSource(src, errors.New("more than one YAML document; expected exactly one"))
	}
	return nil
}

func wrapSource(src string, err error) error {
	if src == "" {
		return err
	}
	return fmt.Errorf("%s: %w", src, err)
}

// flattenYAMLError turns yaml.v3's multi-line "unmarshal errors" into one
// line, so that it fits a log line or a one-line fatal error.
func flattenYAMLError(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return &DecodeError{Problems: append([]string(nil), te.Errors...)}
	}
	return &DecodeError{Problems: []string{strings.TrimPrefix(err.Error(), "yaml: ")}}
}

// DecodeError lists every problem found while decoding, each with its line.
type DecodeError struct {
	Problems []string
}

func (e *DecodeError) Error() string {
	return strings.Join(e.Problems, "; ")
}
