package promotion

import (
	"encoding/json"
	"fmt"
	"sync"
)

// GitCommit has the fields and the Go names of kargoapi.GitCommit (akuity/kargo v1.11.2
// api/v1alpha1/freight_types.go): expressions read `commitFrom(...).ID` by those names.
type GitCommit struct {
	RepoURL   string `json:"repoURL,omitempty"`
	ID        string `json:"id,omitempty"`
	Branch    string `json:"branch,omitempty"`
	Tag       string `json:"tag,omitempty"`
	Message   string `json:"message,omitempty"`
	Author    string `json:"author,omitempty"`
	Committer string `json:"committer,omitempty"`
}

// FreightOrigin is kargoapi.FreightOrigin: where a piece of Freight came from.
type FreightOrigin struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// Freight is the test's Freight: what a Warehouse found (its commits) and the metadata promotions record on
// it (status.metadata, a map of JSON values).
type Freight struct {
	Name    string
	Alias   string
	Origin  FreightOrigin
	Commits []GitCommit
}

// FreightStore holds each Freight's status.metadata as the API server would, for set-metadata to write and
// freightMetadata() to read.
type FreightStore struct {
	mu       sync.Mutex
	metadata map[string]map[string]json.RawMessage
}

func NewFreightStore(freight ...*Freight) *FreightStore {
	s := &FreightStore{metadata: map[string]map[string]json.RawMessage{}}
	for _, f := range freight {
		s.metadata[f.Name] = nil
	}
	return s
}

// Upsert is FreightStatus.UpsertMetadata (api/v1alpha1/freight_types.go): the value is stored as its JSON,
// under its key, leaving every other key as it was (set-metadata patches status with a JSON merge patch,
// pkg/kubeclient/patch.go).
func (s *FreightStore) Upsert(name, key string, value any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	metadata, ok := s.metadata[name]
	if !ok {
		return fmt.Errorf("freights.kargo.akuity.io %q not found", name)
	}
	if key == "" {
		return fmt.Errorf("key must not be empty")
	}
	raw, err := json.Marshal(value)
	if err != nil {
		return err
	}
	if metadata == nil {
		metadata = map[string]json.RawMessage{}
		s.metadata[name] = metadata
	}
	metadata[key] = raw
	return nil
}

// Metadata is the Freight's status.metadata, each value decoded from its JSON (nil when it has none), the
// shape freightMetadata() hands to expressions.
func (s *FreightStore) Metadata(name string) (map[string]any, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	metadata, ok := s.metadata[name]
	if !ok || metadata == nil {
		return nil, ok, nil
	}
	decoded := make(map[string]any, len(metadata))
	for k, raw := range metadata {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, true, fmt.Errorf("failed to unmarshal metadata value for key %s: %w", k, err)
		}
		decoded[k] = v
	}
	return decoded, true, nil
}
