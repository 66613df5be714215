package media

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// errStore fails every Open, as an unreachable bucket does.
type errStore struct{ Store }

func (errStore) Open(context.Context, string) (*Object, error) {
	return nil, errors.New("connection refused")
}

func TestHandler(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		data := pngFile(t, 40, 30)
		img := checked(t, data)
		if err := Put(ctx, s, img); err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/media/", http.StripPrefix("/media/", NewHandler(s, nil)))
		srv := httptest.NewServer(mux)
		defer srv.Close()
		do := func(method, path string, hdr ...string) (*http.Response, []byte) {
			t.Helper()
			req, err := http.NewRequest(method, srv.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < len(hdr); i += 2 {
				req.Header.Set(hdr[i], hdr[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			return resp, body
		}
		etag := `"` + img.Key[:64] + `"`
		want := map[string]string{
			"Content-Type":            "image/png",
			"Cache-Control":           "public, max-age=31536000, immutable",
			"Etag":                    etag,
			"X-Content-Type-Options":  "nosniff",
			"Content-Security-Policy": "default-src 'none'; sandbox",
		}

		resp, body := do("GET", "/media/"+img.Key)
		if resp.StatusCode != 200 || !bytes.Equal(body, data) || resp.ContentLength != int64(len(data)) {
			t.Errorf("GET = %d, %d bytes (Content-Length %d), want 200 and the image", resp.StatusCode, len(body), resp.ContentLength)
		}
		for k, v := range want {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("GET %s = %q, want %q", k, got, v)
			}
		}

		resp, body = do("HEAD", "/media/"+img.Key)
		if resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != int64(len(data)) {
			t.Errorf("HEAD = %d, %d bytes, Content-Length %d", resp.StatusCode, len(body), resp.ContentLength)
		}
		for k, v := range want {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("HEAD %s = %q, want %q", k, got, v)
			}
		}

		for _, inm := range []string{etag, `"other", ` + etag, "*"} {
			resp, body = do("GET", "/media/"+img.Key, "If-None-Match", inm)
			if resp.StatusCode != 304 || len(body) != 0 || resp.Header.Get("Etag") != etag {
				t.Errorf("If-None-Match %s: %d, %d bytes, ETag %q; want 304", inm, resp.StatusCode, len(body), resp.Header.Get("Etag"))
			}
		}
		resp, body = do("GET", "/media/"+img.Key, "If-None-Match", `"`+strings.Repeat("0", 64)+`"`)
		if resp.StatusCode != 200 || !bytes.Equal(body, data) {
			t.Errorf("another If-None-Match: %d, want 200 and the image", resp.StatusCode)
		}

		resp, body = do("GET", "/media/"+img.Key, "Range", "bytes=0-7")
		if resp.StatusCode != 206 || string(body) != "\x89PNG\r\n\x1a\n" {
			t.Errorf("Range: %d %q, want 206 and the signature", resp.StatusCode, body)
		}

		missing := strings.Repeat("0", 64) + ".png"
		for _, path := range []string{missing, "x.png", "..%2f..%2fetc%2fpasswd", "%2e%2e%2f" + img.Key, img.Key + "%2f..%2f", img.Key[:64] + ".svg", img.Key[:64] + ".jpg", ""} {
			resp, _ = do("GET", "/media/"+path)
			if resp.StatusCode != 404 || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("GET /media/%s = %d, want 404 with nosniff", path, resp.StatusCode)
			}
		}

		resp, _ = do("POST", "/media/"+img.Key)
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST = %d, Allow %q; want 405", resp.StatusCode, resp.Header.Get("Allow"))
		}

		// Paths a mux would clean reach the handler as they are when it is
		// mounted otherwise.
		for _, path := range []string{"../x", "../" + img.Key, "/../" + img.Key, img.Key + "/"} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "/", nil)
			req.URL.Path = path
			NewHandler(s, nil).ServeHTTP(rec, req)
			if rec.Code != 404 {
				t.Errorf("path %q = %d, want 404", path, rec.Code)
			}
		}

		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/"+img.Key, nil)
		NewHandler(errStore{s}, nil).ServeHTTP(rec, req)
		if rec.Code != 500 || rec.Header().Get("Cache-Control") != "" {
			t.Errorf("failing store: %d, Cache-Control %q; want 500, uncached", rec.Code, rec.Header().Get("Cache-Control"))
		}
	})
}
