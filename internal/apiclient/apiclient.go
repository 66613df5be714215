// Package apiclient calls a running mailroom API with an account's keys:
// the benchmark (cmd/bench-send) and the load generator (cmd/load) seed
// and drive it through it.
package apiclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client is an account's view of the API at Base (".../api").
type Client struct {
	Base, Public, Secret string
	HTTP                 *http.Client // nil: http.DefaultClient
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// Raw sends method path (a form body when form is set) and answers the
// status and the body as they came.
func (c *Client) Raw(ctx context.Context, method, path string, form url.Values) (int, []byte, error) {
	req, err := c.request(ctx, method, path, form)
	if err != nil {
		return 0, nil, err
	}
	return c.send(req)
}

// Call sends method path and answers the success envelope's message; any
// other answer is an error.
func (c *Client) Call(method, path string, form url.Values) ([]byte, error) {
	req, err := c.request(context.Background(), method, path, form)
	if err != nil {
		return nil, err
	}
	return c.message(req)
}

func (c *Client) request(ctx context.Context, method, path string, form url.Values) (*http.Request, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return req, nil
}

func (c *Client) send(req *http.Request) (int, []byte, error) {
	req.Header.Set("PublicKey", c.Public)
	req.Header.Set("SecretKey", c.Secret)
	res, err := c.http().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

// message sends req and answers the success envelope's message.
func (c *Client) message(req *http.Request) ([]byte, error) {
	code, b, err := c.send(req)
	if err != nil {
		return nil, err
	}
	var env struct {
		Status  string          `json:"status"`
		Message json.RawMessage `json:"message"`
	}
	if code != 200 || json.Unmarshal(b, &env) != nil || env.Status != "success" {
		return nil, fmt.Errorf("%s %s: %d %.300s", req.Method, req.URL.Path, code, b)
	}
	return env.Message, nil
}

// LastID is the id of the last item of a list answer's field.
func (c *Client) LastID(path, field string) (int64, error) {
	b, err := c.Call("GET", path, nil)
	if err != nil {
		return 0, err
	}
	var m map[string][]struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(b, &m); err != nil || len(m[field]) == 0 {
		return 0, fmt.Errorf("%s: no %s in %.200s", path, field, b)
	}
	return m[field][len(m[field])-1].ID, nil
}

// ContactType makes a contact type named name and imports into it the
// rows write writes (ImportCSV).
func (c *Client) ContactType(ctx context.Context, name string, write func(w *bufio.Writer)) (int64, error) {
	if _, err := c.Call("POST", "/contacts-type/add", url.Values{"name": {name}}); err != nil {
		return 0, err
	}
	id, err := c.LastID("/contacts-type", "contactTypes")
	if err != nil {
		return 0, err
	}
	return id, c.ImportCSV(ctx, id, write)
}

// ImportCSV uploads into contact type id, streamed, the CSV file write
// writes (a header line first).
func (c *Client) ImportCSV(ctx context.Context, id int64, write func(w *bufio.Writer)) error {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		mw.WriteField("contact_type_id", strconv.FormatInt(id, 10))
		fw, err := mw.CreateFormFile("file", "contacts.csv")
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		w := bufio.NewWriterSize(fw, 1<<16)
		write(w)
		w.Flush()
		pw.CloseWithError(mw.Close())
	}()
	req, err := http.NewRequestWithContext(ctx, "POST", c.Base+"/contacts/upload-csv", pr)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	_, err = c.message(req)
	return err
}

// WaitHTTP waits up to 10 s for u to answer a GET (a process just started).
func WaitHTTP(u string) error {
	for range 100 {
		if res, err := http.Get(u); err == nil {
			res.Body.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New(u + " did not answer")
}
