package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/testdb"
)

// apiProcess is the real API binary, started against the package's test
// database, so the benchmark measures HTTP, parsing, COPY and the merge as
// a user would meet them, and the process's own peak RSS.
type apiProcess struct {
	cmd      *exec.Cmd
	startRSS int64 // VmHWM once serving, before any import
	url      string
	public   string
	secret   string
}

func startAPI(b *testing.B) *apiProcess {
	b.Helper()
	dsn := testdb.DSN(b)
	bin := filepath.Join(b.TempDir(), "api")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	env := append(os.Environ(), "DATABASE_URL="+dsn, "HTTP_ADDR="+addr, "LOG_LEVEL=warn")

	out, err := (&exec.Cmd{Path: bin, Args: []string{bin, "accounts", "create", "--name", "bench"}, Env: env}).Output()
	if err != nil {
		b.Fatalf("accounts create: %v", err)
	}
	var keys struct {
		Public string `json:"public_key"`
		Secret string `json:"secret_key"`
	}
	if err := json.Unmarshal(out, &keys); err != nil {
		b.Fatal(err)
	}

	cmd := &exec.Cmd{Path: bin, Args: []string{bin}, Env: env, Stderr: os.Stderr}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	p := &apiProcess{cmd: cmd, url: "http://" + addr, public: keys.Public, secret: keys.Secret}
	for i := 0; ; i++ {
		if resp, err := http.Get(p.url + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if i > 200 {
			b.Fatal("api did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.startRSS = p.peakRSS(b)
	return p
}

// peakRSS is the process's high-water resident set size in bytes.
func (p *apiProcess) peakRSS(b *testing.B) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmHWM")
	return 0
}

// writeCSV writes rows contacts with two custom fields, generated on the
// fly so the client holds none of them; first names are First{i}.
func writeCSV(w io.Writer, rows int, seed int) error {
	return writeNamedCSV(w, rows, seed, func(i int) string { return fmt.Sprint("First", i) })
}

// writeNamedCSV is writeCSV with first names from name.
func writeNamedCSV(w io.Writer, rows int, seed int, name func(i int) string) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	bw.WriteString("email,first_name,last_name,country,score,joined\n")
	for i := 0; i < rows; i++ {
		fmt.Fprintf(bw, "user%d.%d@example.com,%s,Last%d,DE,%d,2026-01-%02dT10:30\n", seed, i, name(i), i, i%1000, i%28+1)
	}
	return bw.Flush()
}

// upload streams a generated file to /api/contacts/upload-csv.
func (p *apiProcess) upload(b *testing.B, typeID int64, rows, seed int) {
	p.uploadCSV(b, typeID, func(w io.Writer) error { return writeCSV(w, rows, seed) })
}

// uploadCSV streams the file write writes to /api/contacts/upload-csv.
func (p *apiProcess) uploadCSV(b *testing.B, typeID int64, write func(io.Writer) error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		mw.WriteField("contact_type_id", strconv.FormatInt(typeID, 10))
		fw, _ := mw.CreateFormFile("file", "contacts.csv")
		err := write(fw)
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	status, body := p.send(b, "/api/contacts/upload-csv", mw.FormDataContentType(), pr)
	if status != 200 || string(body) != `{"status":"success","message":"Imported Successfully"}` {
		b.Fatalf("upload: %d %s", status, body)
	}
}

// send POSTs body with the account's keys and answers the status and body.
func (p *apiProcess) send(b *testing.B, path, contentType string, body io.Reader) (int, []byte) {
	req, _ := http.NewRequest("POST", p.url+path, body)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("PublicKey", p.public)
	req.Header.Set("SecretKey", p.secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, out
}

// startImportAPI starts the API process for an import benchmark: a
// database connection beside it (closed at the end), and its account, with
// the custom fields the files fill (score, joined).
func startImportAPI(b *testing.B) (*apiProcess, *pgx.Conn, int64) {
	p := startAPI(b)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testdb.DSN(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(ctx) })
	var userID int64
	if err := conn.QueryRow(ctx, "SELECT id FROM accounts WHERE public_key = $1", p.public).Scan(&userID); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO custom_fields (user_id, field_name, field_type)
		VALUES ($1, 'score', 'number'), ($1, 'joined', 'datetime-local')`, userID); err != nil {
		b.Fatal(err)
	}
	return p, conn, userID
}

// BenchmarkCSVImport imports a fresh file into a fresh contact type per
// iteration, through HTTP into the real API process.
func BenchmarkCSVImport(b *testing.B) {
	p, conn, userID := startImportAPI(b)
	ctx := context.Background()
	for _, rows := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				var typeID int64
				if err := conn.QueryRow(ctx, "INSERT INTO contact_types (user_id, name) VALUES ($1, 'bench') RETURNING id", userID).Scan(&typeID); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				p.upload(b, typeID, rows, i)
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			peak := p.peakRSS(b)
			b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MB")
			b.ReportMetric(float64(peak-p.startRSS)/(1<<20), "rss-growth-MB")
		})
	}
}

// BenchmarkCSVImportWithSegments imports the same kind of file into a
// fresh contact type with no segment and with 100 (segment i: first_name
// starts with N{i}, made through POST /api/segment/save; first names are
// N{i mod 110} x{i}, so a contact joins about 1.9 segments), through HTTP
// into the real API process, the two alternating at each size. After each
// import with segments, every segment's members are checked against its
// condition evaluated over the whole type.
func BenchmarkCSVImportWithSegments(b *testing.B) {
	p, conn, userID := startImportAPI(b)
	ctx := context.Background()
	name := func(i int) string { return fmt.Sprintf("N%d x%d", i%110, i) }
	seed := 0
	for _, rows := range []int{100_000, 1_000_000} {
		for _, segments := range []int{0, 100} {
			b.Run(fmt.Sprintf("rows=%d/segments=%d", rows, segments), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					var typeID int64
					if err := conn.QueryRow(ctx, "INSERT INTO contact_types (user_id, name) VALUES ($1, 'bench') RETURNING id", userID).Scan(&typeID); err != nil {
						b.Fatal(err)
					}
					p.prefixSegments(b, typeID, segments)
					seed++
					b.StartTimer()
					p.uploadCSV(b, typeID, func(w io.Writer) error { return writeNamedCSV(w, rows, seed, name) })
					b.StopTimer()
					if segments > 0 {
						checkPrefixMembers(b, conn, typeID)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

// prefixSegments saves n segments on a contact type through the API:
// segment i holds the contacts whose first name starts with N{i}.
func (p *apiProcess) prefixSegments(b *testing.B, typeID int64, n int) {
	for s := range n {
		p.post(b, "/api/segment/save", url.Values{"contact_type_id": {fmt.Sprint(typeID)}, "segment_name": {fmt.Sprint("s", s)},
			"select_field[]": {"2"}, "select_operator[]": {"starts with"}, "value[]": {fmt.Sprint("N", s)}})
	}
}

// checkPrefixMembers fails unless every segment of the type holds exactly
// the type's contacts whose first name starts with its value, ignoring
// case, and its kept count says how many.
func checkPrefixMembers(b *testing.B, conn *pgx.Conn, typeID int64) {
	var wrong, members int64
	err := conn.QueryRow(context.Background(), `
		WITH want AS (
		    SELECT s.id AS seg, c.id AS contact FROM segments s JOIN contacts c
		      ON c.contact_type_id = s.contact_type_id AND c.deleted_at IS NULL
		     AND starts_with(lower(c.first_name), lower(s.value[1]))
		    WHERE s.contact_type_id = $1 AND s.deleted_at IS NULL
		), have AS (
		    SELECT r.segment_id AS seg, r.contact_id AS contact FROM segment_members r
		    JOIN segments s ON s.id = r.segment_id WHERE s.contact_type_id = $1
		), counted AS (
		    SELECT s.id, (SELECT COALESCE(sum(n), 0) FROM list_counts l WHERE l.kind = 'segment' AND l.key = s.id) AS n,
		        (SELECT count(*) FROM have WHERE have.seg = s.id) AS m
		    FROM segments s WHERE s.contact_type_id = $1
		)
		SELECT (SELECT count(*) FROM ((TABLE want EXCEPT TABLE have) UNION ALL (TABLE have EXCEPT TABLE want)) d)
		     + (SELECT count(*) FROM counted WHERE n <> m),
		       (SELECT count(*) FROM have)`, typeID).Scan(&wrong, &members)
	if err != nil {
		b.Fatal(err)
	}
	if wrong != 0 || members == 0 {
		b.Fatalf("segments of type %d: %d wrong memberships or counts, %d members", typeID, wrong, members)
	}
}

// post sends a form with the account's keys and fails unless it succeeds.
func (p *apiProcess) post(b *testing.B, path string, form url.Values) {
	if status, body := p.send(b, path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode())); status != 200 {
		b.Fatalf("%s: %d %s", path, status, body)
	}
}

// BenchmarkCopyCeiling is PostgreSQL's own COPY of 1,000,000 contacts into
// a table with a primary key and a unique address index: the ceiling the
// import is measured against.
func BenchmarkCopyCeiling(b *testing.B) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testdb.DSN(b))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	const rows = 1_000_000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS copy_ceiling;
			CREATE TABLE copy_ceiling (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, email text NOT NULL,
				first_name text, last_name text);
			CREATE UNIQUE INDEX ON copy_ceiling (lower(email))`); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		n := 0
		_, err := conn.CopyFrom(ctx, pgx.Identifier{"copy_ceiling"}, []string{"email", "first_name", "last_name"},
			pgx.CopyFromFunc(func() ([]any, error) {
				if n == rows {
					return nil, nil
				}
				n++
				return []any{fmt.Sprintf("user%d@example.com", n), "First", "Last"}, nil
			}))
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkAddContactWithSegments adds one contact at a time through
// POST /api/contacts/add (sequential, one client) into a contact type with
// no segment and with 100 (as BenchmarkCSVImportWithSegments'), so each
// add joins about two segments; each run has a fresh type. After the adds
// with segments, every segment's members are checked.
func BenchmarkAddContactWithSegments(b *testing.B) {
	p, conn, userID := startImportAPI(b)
	ctx := context.Background()
	for _, segments := range []int{0, 100} {
		b.Run(fmt.Sprintf("segments=%d", segments), func(b *testing.B) {
			var typeID int64
			if err := conn.QueryRow(ctx, "INSERT INTO contact_types (user_id, name) VALUES ($1, 'bench') RETURNING id", userID).Scan(&typeID); err != nil {
				b.Fatal(err)
			}
			p.prefixSegments(b, typeID, segments)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p.post(b, "/api/contacts/add", url.Values{"contact_type_id": {fmt.Sprint(typeID)}, "country": {"276"},
					"email": {fmt.Sprintf("add%d.%d@example.com", typeID, i)}, "first_name": {fmt.Sprintf("N%d x%d", i%110, i)}})
			}
			b.StopTimer()
			if segments > 0 {
				checkPrefixMembers(b, conn, typeID)
			}
		})
	}
}
