package install

import (
	"encoding/json"
	"slices"
)

// contains reports whether got holds every field of want with the same
// value (numbers compared as JSON numbers): maps by key, lists of objects
// element by element in any order, other lists exactly. It is the drift
// check for objects without a typed extraction.
func contains(got, want any) bool {
	return containsNormalized(normalize(got), normalize(want))
}

func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return out
}

func containsNormalized(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !containsNormalized(gv, wv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok {
			return false
		}
		objects := len(w) > 0
		for _, e := range w {
			if _, isMap := e.(map[string]any); !isMap {
				objects = false
			}
		}
		if !objects {
			return SameJSON(g, w)
		}
		for _, we := range w {
			if !slices.ContainsFunc(g, func(ge any) bool { return containsNormalized(ge, we) }) {
				return false
			}
		}
		return true
	default:
		return SameJSON(got, want)
	}
}
