package media

import (
	"bytes"
	"context"
	"errors"
	"io"
	"time"
)

// CacheControl is the Cache-Control of stored and served images: a key is
// its content's hash, so what a key holds never changes.
const CacheControl = "public, max-age=31536000, immutable"

// ErrNotFound is the error of Open for a key that holds nothing.
var ErrNotFound = errors.New("media: not found")

// ErrInvalidKey is the error of a Store given a key that ValidKey refuses.
var ErrInvalidKey = errors.New("media: invalid key")

// Store keeps images under the keys Check gives them. Every method refuses
// a key that ValidKey refuses with ErrInvalidKey.
type Store interface {
	// Put stores size bytes read from r under key; size -1 reads r to its
	// end. A key already stored is replaced whole or not at all.
	Put(ctx context.Context, key, contentType string, r io.Reader, size int64) error
	// Open opens what key holds, ErrNotFound when it holds nothing. The
	// caller closes the Object.
	Open(ctx context.Context, key string) (*Object, error)
	// Delete removes what key holds; a key that holds nothing is no error.
	Delete(ctx context.Context, key string) error
}

// Object is a stored image opened for reading.
type Object struct {
	io.ReadSeekCloser
	Size        int64
	ContentType string
	ModTime     time.Time
}

// Put stores img under its key.
func Put(ctx context.Context, s Store, img Image) error {
	return s.Put(ctx, img.Key, img.ContentType, bytes.NewReader(img.Data), int64(len(img.Data)))
}
