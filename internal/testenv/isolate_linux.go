package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// isolatedEnv names the node's cgroup root in a process that already runs
// in the node's namespaces.
const isolatedEnv = "KMSHEALTH_NODE_ISOLATED"

// isolation is what the re-executed program knows of its namespaces.
type isolation struct {
	cgroupRoot string // e.g. /kmshealth-node-1234, in every cgroup hierarchy
}

var isolated *isolation

// isolate runs the current program again, whole, as PID 1 of new PID, mount
// and network namespaces, and exits with its status; only the copy inside
// returns (after setting the namespaces up). Everything a node leaves lives
// in those namespaces and goes with them: every process (the kernel kills a
// PID namespace's processes when its first one exits), every mount
// (containerd's snapshots, pods' volumes and network namespace files), every
// iptables rule and chain (kubelet's, kube-proxy's) and every interface. The
// network namespace has loopback and the pods' bridge and no other
// interface, so no packet can leave the machine, whatever a pod sends. The
// one global thing a node makes, its cgroups under one root named for this
// run, is removed here once the copy has exited, and anything else left on
// the host is reported as a failure. So is the copy's temporary directory
// (its TMPDIR, where the test bed's scratch directories are): inside the
// namespaces a node's scratch directory holds mount points (pods' volumes,
// containers' root file systems, network namespace files) until the copy
// exits, so only the parent can remove all of it (unless
// KMSHEALTH_KEEP_TESTENV asks to keep it).
func isolate() error {
	if v := os.Getenv(isolatedEnv); v != "" {
		isolated = &isolation{cgroupRoot: v}
		return setUpNamespaces()
	}
	if os.Geteuid() != 0 {
		return errors.New(`the node test bed runs kubelet, containerd and runc: it needs root (sudo resets PATH and HOME: run sudo env "PATH=$PATH" "KMSHEALTH_CACHE=$HOME/.cache/kmshealth" make test, or as root in CI)`)
	}
	before, err := hostState()
	if err != nil {
		return err
	}
	root := fmt.Sprintf("/kmshealth-node-%d", os.Getpid())
	scratch, err := os.MkdirTemp("", "kmsh-n") // short: unix socket paths live under it
	if err != nil {
		return err
	}
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(os.Environ(), isolatedEnv+"="+root, "TMPDIR="+scratch, logsDirEnv+"="+os.TempDir())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET,
		Pdeathsig:  syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		_ = os.Remove(scratch)
		return fmt.Errorf("start the node's namespaces (clone with new PID, mount and network namespaces): %w", err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for s := range sig {
			_ = cmd.Process.Signal(s)
		}
	}()
	runErr := cmd.Wait()
	signal.Stop(sig)
	code := cmd.ProcessState.ExitCode()
	if code < 0 {
		code = 1
		fmt.Fprintln(os.Stderr, "testenv: the node's namespaces ended with", runErr)
	}
	if err := removeCgroups(root); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: tear-down:", err)
		code = 1
	}
	if err := checkHostState(before); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: tear-down:", err)
		code = 1
	}
	if os.Getenv("KMSHEALTH_KEEP_TESTENV") != "" {
		fmt.Fprintln(os.Stderr, "testenv: kept the node's temporary directory", scratch)
	} else if err := os.RemoveAll(scratch); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: tear-down: remove the node's temporary directory:", err)
		code = 1
	}
	os.Exit(code)
	return nil
}

// setUpNamespaces prepares the copy's namespaces: its mounts private, a
// /proc of its own PID namespace, empty /run, /var/lib and /var/log (where
// containerd, kubelet and the CNI plugins write outside their own
// directories, and where the reporter's socket folder /var/run/kmsplugin
// lives), loopback up, the pods' bridge, and the node's cgroup root.
func setUpNamespaces() error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	for _, dir := range []string{"/run", "/var/lib", "/var/log"} {
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755"); err != nil {
			return fmt.Errorf("mount a tmpfs on %s: %w", dir, err)
		}
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", BridgeName, "type", "bridge"},
		{"addr", "add", BridgeAddress + "/24", "dev", BridgeName},
		{"link", "set", BridgeName, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hierarchies {
		if err := os.MkdirAll(filepath.Join(h, isolated.cgroupRoot), 0o755); err != nil {
			return fmt.Errorf("create the node's cgroup root: %w", err)
		}
	}
	return nil
}

// cgroupHierarchies are the mount points of every cgroup hierarchy (v1 and
// v2) on this machine.
func cgroupHierarchies() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if fs := fields[sep+1]; fs == "cgroup" || fs == "cgroup2" {
			out = append(out, fields[4])
		}
	}
	return out, sc.Err()
}

// removeCgroups removes the node's cgroup root, deepest first, in every
// hierarchy. Its processes are gone (their PID namespace ended), but the
// kernel may take a moment to let go of a cgroup.
func removeCgroups(root string) error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hierarchies {
		top := filepath.Join(h, root)
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			var err error
			for range 50 {
				if err = syscall.Rmdir(dirs[i]); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("cgroup %s left behind: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// host is what the node could leave on the host, outside its namespaces.
type host struct {
	mounts   int
	chains   []string // iptables and ip6tables chains, by table
	netns    []string
	links    []string
	kubelets bool // /var/lib/kubelet exists
}

func hostState() (host, error) {
	var h host
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return h, err
	}
	h.mounts = strings.Count(string(mi), "\n")
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		out, err := exec.Command(save).Output()
		if err != nil {
			if errors.Is(err, exec.ErrNotFound) {
				continue
			}
			return h, fmt.Errorf("%s: %w", save, err)
		}
		table := ""
		for _, line := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(line, "*"):
				table = line[1:]
			case strings.HasPrefix(line, ":"):
				h.chains = append(h.chains, save+" "+table+" "+strings.Fields(line[1:])[0])
			}
		}
	}
	if entries, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range entries {
			h.netns = append(h.netns, e.Name())
		}
	}
	if entries, err := os.ReadDir("/sys/class/net"); err == nil {
		for _, e := range entries {
			h.links = append(h.links, e.Name())
		}
	}
	_, err = os.Stat("/var/lib/kubelet")
	h.kubelets = err == nil
	return h, nil
}

// checkHostState compares the host after the node with before it.
func checkHostState(before host) error {
	after, err := hostState()
	if err != nil {
		return err
	}
	var errs []error
	if after.mounts > before.mounts {
		errs = append(errs, fmt.Errorf("%d mounts more on the host than before the node", after.mounts-before.mounts))
	}
	for _, pair := range []struct {
		what          string
		before, after []string
	}{{"iptables chain", before.chains, after.chains}, {"network namespace", before.netns, after.netns}, {"network interface", before.links, after.links}} {
		for _, x := range pair.after {
			if !slices.Contains(pair.before, x) {
				errs = append(errs, fmt.Errorf("%s %s left on the host", pair.what, x))
			}
		}
	}
	if after.kubelets && !before.kubelets {
		errs = append(errs, errors.New("/var/lib/kubelet left on the host"))
	}
	return errors.Join(errs...)
}
