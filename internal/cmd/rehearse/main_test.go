package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestDeriveConfig(t *testing.T) {
	project, err := os.ReadFile(filepath.Join("..", "..", "..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		config  string
		wantErr string
	}{
		{name: "the project's configuration", config: string(project)},
		{name: "no builds", config: "version: 2\n", wantErr: "no builds"},
		{name: "this machine's OS not released", config: "builds:\n  - goos: [plan9]\n    goarch: [" + runtime.GOARCH + "]\n", wantErr: "builds[0].goos"},
		{name: "this machine's architecture not released", config: "builds:\n  - goos: [" + runtime.GOOS + "]\n    goarch: [mips]\n", wantErr: "builds[0].goarch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".goreleaser.yaml")
			if err := os.WriteFile(path, []byte(tt.config), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := deriveConfig(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("deriveConfig: error %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Only the targets change: the release's ldflags, signing and
			// archive names are the project's.
			var want map[string]any
			if err := yaml.Unmarshal([]byte(tt.config), &want); err != nil {
				t.Fatal(err)
			}
			gotYAML, _ := yaml.Marshal(got)
			for _, b := range want["builds"].([]any) {
				b.(map[string]any)["goos"] = []string{runtime.GOOS}
				b.(map[string]any)["goarch"] = []string{runtime.GOARCH}
			}
			wantYAML, _ := yaml.Marshal(want)
			if string(gotYAML) != string(wantYAML) {
				t.Errorf("derived configuration:\n%s\nwant the project's with this machine's target only:\n%s", gotYAML, wantYAML)
			}
			if !strings.Contains(string(gotYAML), "IMAGE_DIGEST") || !strings.Contains(string(gotYAML), "GPG_FINGERPRINT") {
				t.Errorf("the derived configuration lost the image digest link or the signing:\n%s", gotYAML)
			}
		})
	}
}
