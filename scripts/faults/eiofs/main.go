// eiofs: a FUSE pass-through file system that mirrors a backing directory and, on demand,
// fails like a broken disk. Fault tests mount it as a broker's log dir.
//
//	eiofs <backingDir> <mountPoint>
//
// It mounts and stays in the foreground. SIGUSR1: every later read, write, fsync, create,
// mkdir, truncate, rename and remove returns EIO (lookups, attributes, directory listings and
// statfs keep working, as on a disk whose data path failed). SIGUSR2: heals. SIGTERM or
// SIGINT: unmounts (lazily when files are still open) and exits. Files are opened with
// direct I/O so that reads reach eiofs instead of the kernel's page cache.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"bazil.org/fuse"
	"bazil.org/fuse/fs"
)

var failing atomic.Bool

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: eiofs <backingDir> <mountPoint>")
		os.Exit(2)
	}
	backing, err := filepath.Abs(os.Args[1])
	if err != nil {
		fatal(err)
	}
	mountPoint := os.Args[2]
	conn, err := fuse.Mount(mountPoint, fuse.FSName("eiofs"), fuse.Subtype("eiofs"))
	if err != nil {
		fatal(fmt.Errorf("mount %s: %w", mountPoint, err))
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 1)
	go func() { served <- fs.Serve(conn, &fileSystem{root: backing}) }()
	fmt.Printf("eiofs: serving %s at %s\n", backing, mountPoint)
	for {
		select {
		case sig := <-signals:
			switch sig {
			case syscall.SIGUSR1:
				failing.Store(true)
				fmt.Println("eiofs: failing with EIO")
			case syscall.SIGUSR2:
				failing.Store(false)
				fmt.Println("eiofs: healed")
			default:
				unmount(mountPoint)
				select {
				case <-served:
				case <-time.After(5 * time.Second):
				}
				conn.Close()
				return
			}
		case err := <-served:
			conn.Close()
			if err != nil {
				fatal(err)
			}
			return
		}
	}
}

// unmount detaches the mount; files still open keep it busy, so it falls back to a lazy one.
func unmount(mountPoint string) {
	if err := fuse.Unmount(mountPoint); err == nil {
		return
	}
	for _, cmd := range [][]string{{"fusermount3", "-u", "-z", mountPoint}, {"umount", "-l", mountPoint}} {
		if err := exec.Command(cmd[0], cmd[1:]...).Run(); err == nil {
			return
		}
	}
	fmt.Fprintf(os.Stderr, "eiofs: could not unmount %s\n", mountPoint)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "eiofs:", err)
	os.Exit(1)
}

// errno turns an os error into the errno FUSE answers with.
func errno(err error) error {
	if err == nil {
		return nil
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return fuse.Errno(e)
	}
	return fuse.Errno(syscall.EIO)
}

// injected is the error of an operation on the data path while failing.
func injected() error {
	if failing.Load() {
		return fuse.Errno(syscall.EIO)
	}
	return nil
}

type fileSystem struct{ root string }

func (f *fileSystem) Root() (fs.Node, error) { return nodeAt(f.root), nil }

func (f *fileSystem) Statfs(_ context.Context, _ *fuse.StatfsRequest, resp *fuse.StatfsResponse) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(f.root, &st); err != nil {
		return errno(err)
	}
	resp.Blocks, resp.Bfree, resp.Bavail = st.Blocks, st.Bfree, st.Bavail
	resp.Files, resp.Ffree = st.Files, st.Ffree
	resp.Bsize, resp.Frsize, resp.Namelen = uint32(st.Bsize), uint32(st.Frsize), uint32(st.Namelen)
	return nil
}

// node is a file or directory of the backing tree, by path. One node per path, so that a
// rename moves the node the kernel holds (an open file fsynced after its rename).
type node struct {
	mu   sync.Mutex
	path string
}

var (
	nodesMu sync.Mutex
	nodes   = map[string]*node{}
)

func nodeAt(path string) *node {
	nodesMu.Lock()
	defer nodesMu.Unlock()
	n, ok := nodes[path]
	if !ok {
		n = &node{path: path}
		nodes[path] = n
	}
	return n
}

// moved re-keys the nodes at and under `from` to `to`.
func moved(from, to string) {
	nodesMu.Lock()
	defer nodesMu.Unlock()
	// What the rename replaced is gone: its node (still open somewhere) no longer has a path.
	if replaced, ok := nodes[to]; ok {
		replaced.setPath("")
		delete(nodes, to)
	}
	for p, n := range nodes {
		if p != from && !strings.HasPrefix(p, from+string(filepath.Separator)) {
			continue
		}
		np := to + strings.TrimPrefix(p, from)
		delete(nodes, p)
		n.setPath(np)
		nodes[np] = n
	}
}

func forget(path string) {
	nodesMu.Lock()
	defer nodesMu.Unlock()
	delete(nodes, path)
}

func (n *node) setPath(p string) {
	n.mu.Lock()
	n.path = p
	n.mu.Unlock()
}

func (n *node) at() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.path
}

func (n *node) Attr(_ context.Context, a *fuse.Attr) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(n.at(), &st); err != nil {
		return errno(err)
	}
	fillAttr(a, &st)
	return nil
}

func fillAttr(a *fuse.Attr, st *syscall.Stat_t) {
	// Attributes change under every write: the kernel must not cache them.
	a.Valid = 0
	a.Inode = st.Ino
	a.Size = uint64(st.Size)
	a.Blocks = uint64(st.Blocks)
	a.Atime = time.Unix(st.Atim.Sec, st.Atim.Nsec)
	a.Mtime = time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
	a.Ctime = time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	a.Mode = os.FileMode(st.Mode & 0o777)
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		a.Mode |= os.ModeDir
	case syscall.S_IFLNK:
		a.Mode |= os.ModeSymlink
	}
	a.Nlink = uint32(st.Nlink)
	a.Uid, a.Gid = st.Uid, st.Gid
	a.BlockSize = uint32(st.Blksize)
}

func (n *node) child(name string) string { return filepath.Join(n.at(), name) }

func (n *node) Lookup(_ context.Context, name string) (fs.Node, error) {
	p := n.child(name)
	if _, err := os.Lstat(p); err != nil {
		return nil, errno(err)
	}
	return nodeAt(p), nil
}

func (n *node) ReadDirAll(_ context.Context) ([]fuse.Dirent, error) {
	entries, err := os.ReadDir(n.at())
	if err != nil {
		return nil, errno(err)
	}
	out := make([]fuse.Dirent, 0, len(entries))
	for _, e := range entries {
		t := fuse.DT_File
		if e.IsDir() {
			t = fuse.DT_Dir
		}
		out = append(out, fuse.Dirent{Name: e.Name(), Type: t})
	}
	return out, nil
}

func (n *node) Open(_ context.Context, req *fuse.OpenRequest, resp *fuse.OpenResponse) (fs.Handle, error) {
	if req.Dir {
		return n, nil
	}
	// The kernel keeps the offsets (O_APPEND included): the backing file is written at them.
	flags := int(req.Flags) &^ (syscall.O_CREAT | syscall.O_EXCL | syscall.O_APPEND | syscall.O_TRUNC)
	f, err := os.OpenFile(n.at(), flags, 0)
	if err != nil {
		return nil, errno(err)
	}
	resp.Flags |= fuse.OpenDirectIO
	return &handle{f: f}, nil
}

func (n *node) Create(_ context.Context, req *fuse.CreateRequest, resp *fuse.CreateResponse) (fs.Node, fs.Handle, error) {
	if err := injected(); err != nil {
		return nil, nil, err
	}
	p := n.child(req.Name)
	flags := int(req.Flags)&^(syscall.O_APPEND|syscall.O_TRUNC) | syscall.O_CREAT
	f, err := os.OpenFile(p, flags, req.Mode.Perm())
	if err != nil {
		return nil, nil, errno(err)
	}
	child := nodeAt(p)
	if err := child.Attr(context.Background(), &resp.Attr); err != nil {
		f.Close()
		return nil, nil, err
	}
	resp.Flags |= fuse.OpenDirectIO
	return child, &handle{f: f}, nil
}

func (n *node) Mkdir(_ context.Context, req *fuse.MkdirRequest) (fs.Node, error) {
	if err := injected(); err != nil {
		return nil, err
	}
	p := n.child(req.Name)
	if err := os.Mkdir(p, req.Mode.Perm()); err != nil {
		return nil, errno(err)
	}
	return nodeAt(p), nil
}

func (n *node) Remove(_ context.Context, req *fuse.RemoveRequest) error {
	if err := injected(); err != nil {
		return err
	}
	p := n.child(req.Name)
	var err error
	if req.Dir {
		err = syscall.Rmdir(p)
	} else {
		err = syscall.Unlink(p)
	}
	if err == nil {
		forget(p)
	}
	return errno(err)
}

func (n *node) Rename(_ context.Context, req *fuse.RenameRequest, newDir fs.Node) error {
	if err := injected(); err != nil {
		return err
	}
	target, ok := newDir.(*node)
	if !ok {
		return fuse.Errno(syscall.EXDEV)
	}
	from, to := n.child(req.OldName), target.child(req.NewName)
	if err := os.Rename(from, to); err != nil {
		return errno(err)
	}
	moved(from, to)
	return nil
}

func (n *node) Setattr(ctx context.Context, req *fuse.SetattrRequest, resp *fuse.SetattrResponse) error {
	if req.Valid.Size() {
		if err := injected(); err != nil {
			return err
		}
		if err := os.Truncate(n.at(), int64(req.Size)); err != nil {
			return errno(err)
		}
	}
	if req.Valid.Mode() {
		if err := os.Chmod(n.at(), req.Mode.Perm()); err != nil {
			return errno(err)
		}
	}
	if req.Valid.Atime() || req.Valid.Mtime() {
		if err := os.Chtimes(n.at(), req.Atime, req.Mtime); err != nil {
			return errno(err)
		}
	}
	return n.Attr(ctx, &resp.Attr)
}

// Fsync of a file or a directory: the backing one is fsynced.
func (n *node) Fsync(_ context.Context, _ *fuse.FsyncRequest) error {
	if err := injected(); err != nil {
		return err
	}
	f, err := os.Open(n.at())
	if err != nil {
		return errno(err)
	}
	defer f.Close()
	return errno(f.Sync())
}

type handle struct{ f *os.File }

func (h *handle) Read(_ context.Context, req *fuse.ReadRequest, resp *fuse.ReadResponse) error {
	if err := injected(); err != nil {
		return err
	}
	buf := make([]byte, req.Size)
	n, err := h.f.ReadAt(buf, req.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return errno(err)
	}
	resp.Data = buf[:n]
	return nil
}

func (h *handle) Write(_ context.Context, req *fuse.WriteRequest, resp *fuse.WriteResponse) error {
	if err := injected(); err != nil {
		return err
	}
	n, err := h.f.WriteAt(req.Data, req.Offset)
	resp.Size = n
	return errno(err)
}

func (h *handle) Flush(_ context.Context, _ *fuse.FlushRequest) error { return nil }

func (h *handle) Release(_ context.Context, _ *fuse.ReleaseRequest) error { return errno(h.f.Close()) }
