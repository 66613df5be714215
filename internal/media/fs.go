package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// FS is a Store in a directory of the local file system. A key is a file in
// a subdirectory named for its first two hex digits (ab/abcd….png), so no
// directory grows past a 256th of the images.
type FS struct {
	dir string
}

// NewFS returns the Store in dir, creating dir if need be.
func NewFS(dir string) (*FS, error) {
	if dir == "" {
		return nil, errors.New("media: no directory")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("media: %w", err)
	}
	return &FS{dir: dir}, nil
}

func (s *FS) path(key string) string { return filepath.Join(s.dir, key[:2], key) }

// Put writes the bytes to a temporary file beside the key's, syncs it and
// renames it to the key, then syncs the directory: a reader sees the whole
// file or none, and a crash leaves at worst a temporary file (named
// .put-…, never a valid key, so never served). The content type is not
// kept: the key's extension names it.
func (s *FS) Put(ctx context.Context, key, contentType string, r io.Reader, size int64) (err error) {
	if !ValidKey(key) {
		return ErrInvalidKey
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	sub := filepath.Join(s.dir, key[:2])
	created := false
	switch err := os.Mkdir(sub, 0o755); {
	case err == nil:
		created = true
	case !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("media: %w", err)
	}
	tmp, err := os.CreateTemp(sub, ".put-*")
	if err != nil {
		return fmt.Errorf("media: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	src := r
	if size >= 0 {
		src = io.LimitReader(r, size+1)
	}
	n, err := io.Copy(tmp, src)
	if err != nil {
		return fmt.Errorf("media: put %s: %w", key, err)
	}
	if size >= 0 && n != size {
		return fmt.Errorf("media: put %s: read %d bytes, want %d", key, n, size)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("media: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("media: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("media: %w", err)
	}
	if err = os.Rename(tmp.Name(), s.path(key)); err != nil {
		return fmt.Errorf("media: %w", err)
	}
	if err = syncDir(sub); err != nil {
		return err
	}
	if created {
		return syncDir(s.dir)
	}
	return nil
}

// Open opens the key's file.
func (s *FS) Open(ctx context.Context, key string) (*Object, error) {
	if !ValidKey(key) {
		return nil, ErrInvalidKey
	}
	f, err := os.Open(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("media: %w", err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = ErrNotFound
		}
		return nil, fmt.Errorf("media: open %s: %w", key, err)
	}
	return &Object{ReadSeekCloser: f, Size: fi.Size(), ContentType: contentTypeOf(key), ModTime: fi.ModTime()}, nil
}

// Delete removes the key's file.
func (s *FS) Delete(ctx context.Context, key string) error {
	if !ValidKey(key) {
		return ErrInvalidKey
	}
	if err := os.Remove(s.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("media: %w", err)
	}
	return nil
}

// syncDir makes a rename or a new entry in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("media: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("media: sync %s: %w", dir, err)
	}
	return nil
}
