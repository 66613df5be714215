package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 is a Store in an S3-compatible bucket, for deployments where several
// API processes share the images. Objects are written with their content
// type and a year's immutable Cache-Control, so the bucket can also be
// served directly.
type S3 struct {
	client *minio.Client
	bucket string
	prefix string
}

// NewS3 returns the Store in the bucket cfg's S3 fields name. It does not
// reach the server: a wrong endpoint, bucket or key shows in the first Put
// or Open.
func NewS3(cfg Config) (*S3, error) {
	if cfg.S3Endpoint == "" || cfg.S3Bucket == "" {
		return nil, errors.New("media: S3 needs an endpoint and a bucket")
	}
	if strings.Contains(cfg.S3Endpoint, "/") {
		return nil, fmt.Errorf("media: S3 endpoint %q: want host[:port], without scheme or path", cfg.S3Endpoint)
	}
	c, err := minio.New(cfg.S3Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.S3AccessKey, cfg.S3SecretKey, ""),
		Secure: cfg.S3UseSSL,
		Region: cfg.S3Region,
	})
	if err != nil {
		return nil, fmt.Errorf("media: %w", err)
	}
	return &S3{client: c, bucket: cfg.S3Bucket, prefix: cfg.S3Prefix}, nil
}

// Put reads the bytes into memory, then uploads them as the key's object in
// one request, which minio-go can repeat on a passing failure. Images are
// small; an upload of unknown size would take a multipart upload and a
// 16 MiB buffer instead.
func (s *S3) Put(ctx context.Context, key, contentType string, r io.Reader, size int64) error {
	if !ValidKey(key) {
		return ErrInvalidKey
	}
	if size >= 0 {
		r = io.LimitReader(r, size+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("media: put %s: %w", key, err)
	}
	if size >= 0 && int64(len(b)) != size {
		return fmt.Errorf("media: put %s: read %d bytes, want %d", key, len(b), size)
	}
	_, err = s.client.PutObject(ctx, s.bucket, s.prefix+key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{
		ContentType:  contentType,
		CacheControl: CacheControl,
	})
	if err != nil {
		return fmt.Errorf("media: put %s: %w", key, err)
	}
	return nil
}

// Open asks for the key's object's metadata (a HEAD request); its bytes are
// fetched as they are read. A HEAD answer carries no error code, so a
// missing bucket reads as ErrNotFound here too; Put names it.
func (s *S3) Open(ctx context.Context, key string) (*Object, error) {
	if !ValidKey(key) {
		return nil, ErrInvalidKey
	}
	o, err := s.client.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s3Error(key, err)
	}
	fi, err := o.Stat()
	if err != nil {
		o.Close()
		return nil, s3Error(key, err)
	}
	return &Object{ReadSeekCloser: o, Size: fi.Size, ContentType: fi.ContentType, ModTime: fi.LastModified}, nil
}

// Delete removes the key's object.
func (s *S3) Delete(ctx context.Context, key string) error {
	if !ValidKey(key) {
		return ErrInvalidKey
	}
	err := s.client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{})
	if err != nil && !errors.Is(s3Error(key, err), ErrNotFound) {
		return s3Error(key, err)
	}
	return nil
}

func s3Error(key string, err error) error {
	if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
		return ErrNotFound
	}
	return fmt.Errorf("media: %s: %w", key, err)
}
