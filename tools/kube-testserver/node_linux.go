package main

import (
	"context"

	"github.com/spf13/cobra"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

func init() {
	commands["kube-proxy"] = proxy.NewProxyCommand
	commands["kubelet"] = func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) }
}
