package media

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
)

const testBucket = "mailroom-media"

// newFakeS3 runs an S3 server in the test process, with testBucket made,
// and returns the Config that reaches it. Each wrap, if any, wraps the
// server's handler.
func newFakeS3(t *testing.T, wrap ...func(http.Handler) http.Handler) Config {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(testBucket); err != nil {
		t.Fatal(err)
	}
	h := gofakes3.New(backend).Server()
	for _, w := range wrap {
		h = w(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		S3Endpoint:  u.Host,
		S3Bucket:    testBucket,
		S3AccessKey: "test-access",
		S3SecretKey: "test-secret",
		S3Region:    "us-east-1",
		S3Prefix:    "media/",
	}
}

// backends are the stores every behaviour test runs against.
var backends = []struct {
	name string
	open func(t *testing.T) Store
}{
	{"fs", func(t *testing.T) Store {
		s, err := Open(Config{Dir: filepath.Join(t.TempDir(), "media")})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"s3", func(t *testing.T) Store {
		s, err := Open(newFakeS3(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

// forEachBackend runs test against a new store of each backend.
func forEachBackend(t *testing.T, test func(t *testing.T, s Store)) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			test(t, b.open(t))
		})
	}
}

func checked(t *testing.T, data []byte) Image {
	t.Helper()
	img, err := Check(bytes.NewReader(data), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func readObject(t *testing.T, s Store, key string) (*Object, []byte) {
	t.Helper()
	o, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("Open(%s): %v", key, err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		t.Fatal(err)
	}
	return o, b
}

func TestStorePutOpenDelete(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		for _, data := range [][]byte{pngFile(t, 40, 30), jpegFile(t, 64, 48), gifFile(t, 20, 10, 3), webpFile} {
			img := checked(t, data)
			if _, err := s.Open(ctx, img.Key); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Open before Put: err = %v, want ErrNotFound", err)
			}
			if err := Put(ctx, s, img); err != nil {
				t.Fatal(err)
			}
			o, got := readObject(t, s, img.Key)
			if !bytes.Equal(got, data) {
				t.Errorf("%s: read %d bytes that differ from the %d put", img.Key, len(got), len(data))
			}
			if o.Size != int64(len(data)) || o.ContentType != img.ContentType || o.ModTime.IsZero() {
				t.Errorf("%s: Object = %d bytes, %q, %v", img.Key, o.Size, o.ContentType, o.ModTime)
			}
			// The same image again replaces the object with itself.
			if err := s.Put(ctx, img.Key, img.ContentType, bytes.NewReader(data), -1); err != nil {
				t.Fatal(err)
			}
			if _, got := readObject(t, s, img.Key); !bytes.Equal(got, data) {
				t.Errorf("%s: differs after a second Put", img.Key)
			}
			if err := s.Delete(ctx, img.Key); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Open(ctx, img.Key); !errors.Is(err, ErrNotFound) {
				t.Errorf("Open after Delete: err = %v, want ErrNotFound", err)
			}
			if err := s.Delete(ctx, img.Key); err != nil {
				t.Errorf("Delete of a deleted key: %v", err)
			}
		}
	})
}

func TestStoreSeeks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		data := pngFile(t, 40, 30)
		img := checked(t, data)
		if err := Put(ctx, s, img); err != nil {
			t.Fatal(err)
		}
		o, err := s.Open(ctx, img.Key)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		if n, err := o.Seek(-12, io.SeekEnd); err != nil || n != int64(len(data)-12) {
			t.Fatalf("Seek = %d, %v", n, err)
		}
		tail, err := io.ReadAll(o)
		if err != nil || !bytes.Equal(tail, data[len(data)-12:]) {
			t.Errorf("read %q, %v after seeking, want the IEND chunk", tail, err)
		}
	})
}

func TestStoreRefusesAShortPut(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		img := checked(t, pngFile(t, 40, 30))
		short := bytes.NewReader(img.Data[:len(img.Data)-10])
		if err := s.Put(ctx, img.Key, img.ContentType, short, int64(len(img.Data))); err == nil {
			t.Fatal("Put of fewer bytes than its size succeeded")
		}
		if _, err := s.Open(ctx, img.Key); !errors.Is(err, ErrNotFound) {
			t.Errorf("Open after a failed Put: err = %v, want ErrNotFound", err)
		}
	})
}

var badKeys = []string{
	"",
	"x",
	"../x",
	"../../../etc/passwd",
	"..",
	"/etc/passwd",
	"ab/../../x",
	strings.Repeat("a", 64) + ".png/../../x",
	"../" + strings.Repeat("a", 64) + ".png",
	strings.Repeat("a", 64) + ".svg",
	strings.Repeat("a", 64) + ".html",
	strings.Repeat("A", 64) + ".png",
	strings.Repeat("a", 64),
	strings.Repeat("a", 62) + "/..png",
}

func TestStoreRefusesBadKeys(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		for _, key := range badKeys {
			if err := s.Put(ctx, key, "image/png", strings.NewReader("x"), 1); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("Put(%q): err = %v, want ErrInvalidKey", key, err)
			}
			if _, err := s.Open(ctx, key); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("Open(%q): err = %v, want ErrInvalidKey", key, err)
			}
			if err := s.Delete(ctx, key); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("Delete(%q): err = %v, want ErrInvalidKey", key, err)
			}
		}
	})
}

func TestFSLayout(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "media")
	s, err := NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	img := checked(t, pngFile(t, 40, 30))
	if err := Put(ctx, s, img); err != nil {
		t.Fatal(err)
	}
	// A failed Put leaves no temporary file behind.
	other := checked(t, jpegFile(t, 64, 48))
	if err := s.Put(ctx, other.Key, other.ContentType, bytes.NewReader(other.Data[:10]), int64(len(other.Data))); err == nil {
		t.Fatal("short Put succeeded")
	}
	for _, key := range badKeys {
		s.Put(ctx, key, "image/png", strings.NewReader("x"), 1)
	}
	var files []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, path)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join("media", img.Key[:2], img.Key)
	if len(files) != 1 || files[0] != want {
		t.Errorf("files = %q, want only %q", files, want)
	}
	fi, err := os.Stat(filepath.Join(root, want))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("stat = %v, %v; want mode 0644", fi, err)
	}
}

func TestS3ObjectMetadata(t *testing.T) {
	t.Parallel()
	// The fake server keeps no Cache-Control: look at the requests.
	var mu sync.Mutex
	var cacheControl []string
	cfg := newFakeS3(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == "PUT" {
				mu.Lock()
				cacheControl = append(cacheControl, r.Header.Get("Cache-Control"))
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})
	})
	s, err := NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	img := checked(t, gifFile(t, 20, 10, 3))
	if err := Put(ctx, s, img); err != nil {
		t.Fatal(err)
	}
	// The object is under the prefix, typed and cacheable, so the bucket can
	// be served as it is.
	fi, err := s.client.StatObject(ctx, testBucket, "media/"+img.Key, minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size != int64(len(img.Data)) || fi.ContentType != "image/gif" {
		t.Errorf("object = %d bytes, %q; want %d, image/gif", fi.Size, fi.ContentType, len(img.Data))
	}
	mu.Lock()
	if len(cacheControl) != 1 || cacheControl[0] != CacheControl {
		t.Errorf("PUT requests' Cache-Control = %q, want one %q", cacheControl, CacheControl)
	}
	mu.Unlock()
	// Without the prefix, the same bucket holds nothing.
	unprefixed := cfg
	unprefixed.S3Prefix = ""
	s2, err := NewS3(unprefixed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Open(ctx, img.Key); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open without the prefix: err = %v, want ErrNotFound", err)
	}
}

func TestS3MissingBucket(t *testing.T) {
	t.Parallel()
	cfg := newFakeS3(t)
	cfg.S3Bucket = "no-such-bucket"
	s, err := NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	img := checked(t, pngFile(t, 4, 4))
	if err := Put(context.Background(), s, img); err == nil || !strings.Contains(err.Error(), "bucket") {
		t.Fatalf("Put into a missing bucket: err = %v, want one naming the bucket", err)
	}
}

func TestOpenConfig(t *testing.T) {
	t.Parallel()
	if s, err := Open(Config{Dir: t.TempDir()}); err != nil {
		t.Error(err)
	} else if _, ok := s.(*FS); !ok {
		t.Errorf("Open(Dir) = %T, want *FS", s)
	}
	if s, err := Open(Config{Dir: t.TempDir(), S3Endpoint: "127.0.0.1:9000", S3Bucket: "b"}); err != nil {
		t.Error(err)
	} else if _, ok := s.(*S3); !ok {
		t.Errorf("Open(S3Endpoint) = %T, want *S3", s)
	}
	for _, cfg := range []Config{{}, {S3Endpoint: "127.0.0.1:9000"}, {S3Bucket: "b", S3Endpoint: "http://127.0.0.1:9000"}} {
		if _, err := Open(cfg); err == nil {
			t.Errorf("Open(%+v) succeeded", cfg)
		}
	}
}
