//go:build !linux

package testenv

import (
	"context"
	"errors"
	"time"
)

// Node is a real kubelet node; only Linux has one.
type Node struct {
	Name, Image, ImageTarball, ContainerdSocket string
	StartTime                                   time.Duration
}

var errNoNode = errors.New("the node test bed needs Linux (kubelet, containerd and runc), as root")

// Node fails: only Linux has a node.
func (e *Env) Node(context.Context) (*Node, error) { return nil, errNoNode }

func (n *Node) stop() {}

// NodeLog is empty: there is no node.
func (n *Node) NodeLog(string) string { return "" }

// PodLogs is empty: there is no node.
func (n *Node) PodLogs(string, string) string { return "" }

func isolate() error { return errNoNode }

// MirrorRegistry fails: there is no node.
func (n *Node) MirrorRegistry(string, string) error { return errNoNode }
