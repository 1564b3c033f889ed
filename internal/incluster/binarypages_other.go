//go:build !linux

package incluster

// ReleaseBinaryPages does nothing outside Linux: the in-cluster modes run
// on Linux nodes.
func ReleaseBinaryPages() (int64, error) { return 0, nil }
