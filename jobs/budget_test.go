package jobs_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	"github.com/hibiken/asynq"

	mrdkim "github.com/mailroom/mailroom/internal/dkim"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/racetest"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// The report's send: a template of 780 ((full_name)), in subject and
// preheader too, to contacts whose first and last names are 255 emoji
// each, makes mails of 9.95 MB, under MAX_MAIL_BYTES. Three such sends at
// once (60 of those recipients), each in batches of 16 two at a time, 16
// mails of a batch in flight (SEND_CONCURRENCY), tasks run 20 at a time
// (WORKER_CONCURRENCY), DKIM-signed, over 8 SMTP connections: the heap
// stays within MAIL_MEMORY_BUDGET (64 MB here) and a margin for
// garbage not yet collected, where every mail built at once took
// gigabytes. And every mail arrives whole: its DKIM signature verifies,
// its subject is the name, its parts hold the name 780 times (the HTML
// once more: the preheader).
func TestMailMemoryBudget(t *testing.T) {
	racetest.Heavy(t)
	// Not parallel: the heap is the whole process's.
	ctx := context.Background()
	d := testdb.New(t)
	emoji := strings.Repeat("😀", mail.MaxLine)
	name := emoji + " " + emoji
	html := "<p>" + strings.Repeat("((full_name)) ", 780) + "</p>"
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys := &mrdkim.Keys{}
	keys.Add(mrdkim.NewKey("acme.example", "mr1", priv))

	var mu sync.Mutex
	got := map[string][]int64{} // the sizes of the mails each big recipient got
	var bad []string
	s := smtptest.New(t, smtptest.Options{Inspect: func(_ string, to []string, data io.Reader) error {
		n, err := checkBigMail(data, name, pub)
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(to[0], "big") {
			got[to[0]] = append(got[to[0]], n)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", to[0], err))
			}
		}
		return nil
	}})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 8, Timeout: time.Minute})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 16, Window: 2, Concurrency: 16, StallAfter: time.Minute,
		MemoryBudget: 64 << 20}, func(d *jobs.Deps) { d.DKIM = keys })

	var sends []int64
	big := 0
	for i, n := range []int{20, 24, 16} {
		f := newSendFixture(t, d, html)
		exec(t, d, "UPDATE single_sends SET subject = '((full_name))', preheader = '((full_name))', status = 1 WHERE id = $1", f.send)
		exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email, first_name, last_name)
			SELECT $1, $2, 'big' || $3::int || '-' || g || '@example.com', $4, $4 FROM generate_series(1, $5::int) g`,
			f.user, f.typeA, i, emoji, n)
		sends = append(sends, f.send)
		big += n
	}
	runtime.GC()
	base, _ := heapObjects()
	stop, top := make(chan struct{}), make(chan [2]uint64)
	go func() {
		var most [2]uint64 // heap objects, and the live heap the last GC found
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			objects, live := heapObjects()
			most = [2]uint64{max(most[0], objects), max(most[1], live)}
			select {
			case <-stop:
				top <- most
				return
			case <-tick.C:
			}
		}
	}()
	for _, id := range sends {
		q.enqueue(ctx, jobs.NewDispatchTask(id, 1, time.Now()))
	}
	q.drainConcurrently(t, mux, 20)
	close(stop)
	most := <-top
	peak := most[0]
	t.Logf("heap objects: %.1f MB before the sends, %.1f MB at most during them (budget 64 MB); the live heap a GC found: %.1f MB at most",
		float64(base)/(1<<20), float64(peak)/(1<<20), float64(most[1])/(1<<20))
	if peak > 200<<20 {
		t.Errorf("heap objects peaked at %.1f MB while the sends ran: more than the budget of 64 MB and a margin (200 MB)", float64(peak)/(1<<20))
	}
	// Nothing of the mails is kept once they went.
	runtime.GC()
	if after, _ := heapObjects(); after > base+32<<20 {
		t.Errorf("heap objects %.1f MB after the sends, %.1f MB before", float64(after)/(1<<20), float64(base)/(1<<20))
	} else {
		t.Logf("heap objects after the sends: %.1f MB", float64(after)/(1<<20))
	}

	mu.Lock()
	defer mu.Unlock()
	for _, b := range bad {
		t.Error(b)
	}
	if len(got) != big {
		t.Errorf("%d big recipients got mail, want %d", len(got), big)
	}
	for to, sizes := range got {
		if len(sizes) != 1 || sizes[0] < 9_900_000 || sizes[0] > render10MB {
			t.Errorf("%s got mails of %v bytes, want one of about 9.95 MB", to, sizes)
		}
	}
	for i, id := range sends {
		if c := sendCounters(t, d, id); c.Status != 3 {
			t.Errorf("send %d: %+v, want completed", i, c)
		}
		if n := scalar[int64](t, d, "SELECT count(*) FROM deliveries WHERE send_id = $1 AND status <> 2", id); n != 0 {
			t.Errorf("send %d: %d deliveries not sent", i, n)
		}
	}
}

// A mail that needs more than the whole budget takes the whole budget:
// it still goes, alone. With MAIL_MEMORY_BUDGET at 1 MB, the report's six
// 9.95 MB mails of one batch, 16 senders, reach the server one after the
// other, each whole, and the send completes.
func TestMailBiggerThanBudget(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	emoji := strings.Repeat("😀", mail.MaxLine)
	var mu sync.Mutex
	var at, most, big int // big mails arriving now, at most at once, in all
	s := smtptest.New(t, smtptest.Options{Inspect: func(_ string, to []string, data io.Reader) error {
		if !strings.HasPrefix(to[0], "big") {
			return nil
		}
		mu.Lock()
		at++
		most = max(most, at)
		mu.Unlock()
		n, _ := io.Copy(io.Discard, data)
		mu.Lock()
		at--
		if n > 9_900_000 && n <= render10MB {
			big++
		}
		mu.Unlock()
		return nil
	}})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 8, Timeout: time.Minute})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 16, Concurrency: 16, StallAfter: time.Minute, MemoryBudget: 1 << 20})
	f := newSendFixture(t, d, "<p>"+strings.Repeat("((full_name)) ", 780)+"</p>")
	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email, first_name, last_name)
		SELECT $1, $2, 'big' || g || '@example.com', $3, $3 FROM generate_series(1, 6) g`, f.user, f.typeA, emoji)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, 1, time.Now()))
	q.drain(t, mux)
	mu.Lock()
	defer mu.Unlock()
	if big != 6 || most != 1 {
		t.Errorf("%d whole big mails arrived, at most %d at once; want 6, one at a time", big, most)
	}
	if c := sendCounters(t, d, f.send); c.Status != 3 {
		t.Errorf("send %+v, want completed", c)
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM deliveries WHERE send_id = $1 AND status <> 2", f.send); n != 0 {
		t.Errorf("%d deliveries not sent", n)
	}
}

const render10MB = 10 << 20

// heapObjects is the bytes of heap objects, live or not yet collected,
// and of those the last GC found live.
func heapObjects() (objects, live uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// checkBigMail reads a mail as it arrives, holding no more than a part's
// line at a time, and answers its length: its DKIM signature (the key
// pub) verifies, its subject is name, and its text and HTML parts hold
// name 780 and 781 times. A mail to a fixture's contact (a short name)
// answers its length and an error nobody looks at.
func checkBigMail(data io.Reader, name string, pub ed25519.PublicKey) (int64, error) {
	cr := &countReader{r: data}
	pr, pw := io.Pipe()
	verified := make(chan error, 1)
	go func() {
		vs, err := dkim.VerifyWithOptions(pr, &dkim.VerifyOptions{LookupTXT: func(string) ([]string, error) {
			return []string{"v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(pub)}, nil
		}})
		io.Copy(io.Discard, pr)
		if err == nil && (len(vs) != 1 || vs[0].Err != nil) {
			err = fmt.Errorf("DKIM: %+v", vs)
		}
		verified <- err
	}()
	err := readParts(io.TeeReader(cr, pw), name)
	io.Copy(pw, cr)
	pw.Close()
	return cr.n, errors.Join(err, <-verified)
}

func readParts(r io.Reader, name string) error {
	m, err := netmail.ReadMessage(bufio.NewReaderSize(r, 64<<10))
	if err != nil {
		return err
	}
	if subject, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject")); err != nil || subject != name {
		return fmt.Errorf("subject %.40q…, %v", subject, err)
	}
	_, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	parts := multipart.NewReader(m.Body, params["boundary"])
	for _, want := range []struct {
		typ string
		n   int
	}{{"text/plain", 780}, {"text/html", 781}} {
		p, err := parts.NextPart() // quoted-printable decoded
		if err != nil {
			return err
		}
		if typ := p.Header.Get("Content-Type"); !strings.HasPrefix(typ, want.typ) {
			return fmt.Errorf("part %q, want %s", typ, want.typ)
		}
		if n, err := count(p, []byte(name)); err != nil || n != want.n {
			return fmt.Errorf("%s part: the name %d times (%v), want %d", want.typ, n, err, want.n)
		}
	}
	return nil
}

// count is how often pat occurs in what r holds, read 64 KB at a time.
func count(r io.Reader, pat []byte) (int, error) {
	buf := make([]byte, 64<<10+len(pat))
	n, have := 0, 0
	for {
		k, err := r.Read(buf[have:])
		have += k
		win := buf[:have]
		for i := bytes.Index(win, pat); i >= 0; i = bytes.Index(win, pat) {
			n++
			win = win[i+len(pat):]
		}
		// Keep what may start the next occurrence.
		have = copy(buf, win[len(win)-min(len(win), len(pat)-1):])
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// drainConcurrently runs the queue's tasks workers at a time, as a worker
// with WORKER_CONCURRENCY workers does, until none is left or running;
// tasks the running ones queue are taken as they come.
func (q *queue) drainConcurrently(t *testing.T, mux *asynq.ServeMux, workers int) {
	t.Helper()
	cond := sync.NewCond(&q.mu)
	running := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q.mu.Lock()
			defer q.mu.Unlock()
			for {
				if len(q.tasks) == 0 {
					if running == 0 {
						cond.Broadcast()
						return
					}
					cond.Wait()
					continue
				}
				task := q.tasks[0]
				q.tasks = q.tasks[1:]
				delete(q.ids, taskID(task))
				running++
				q.mu.Unlock()
				err := mux.ProcessTask(context.Background(), task)
				q.mu.Lock()
				running--
				cond.Broadcast()
				if err != nil {
					t.Errorf("%s %s: %v", task.Type(), task.Payload(), err)
				}
			}
		}()
	}
	wg.Wait()
}
