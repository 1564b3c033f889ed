package main

import (
	"strings"
	"testing"
)

func TestParseReencryptFlags(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		want    reencryptOptions
		wantErr string
	}{
		{args: nil, want: reencryptOptions{secrets: 10000, concurrency: 8, page: 500}},
		{args: []string{"-secrets=100", "-concurrency=2", "-page=50"}, want: reencryptOptions{secrets: 100, concurrency: 2, page: 50}},
		{args: []string{"-secrets=0"}, wantErr: "-secrets=0"},
		{args: []string{"-concurrency=0"}, wantErr: "-concurrency=0"},
		{args: []string{"-page=-1"}, wantErr: "-page=-1"},
		{args: []string{"extra"}, wantErr: "unexpected arguments"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := parseReencryptFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
