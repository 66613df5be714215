// Command bench-send measures a whole single send end to end: the real
// api and worker processes (bin/api, bin/worker; `make bench-send` builds
// them) against a fresh database, Redis database 15 and an SMTP sink of
// the project (internal/smtp/smtptest.Sink, pipelining). It imports N
// contacts through the API with an overlapping second list and a few
// suppressions, creates a send of a ~4 KB personalized HTML mail, waits
// for status 3, and prints time to first mail, expansion time, end-to-end
// mails/s, the workers' peak RSS and, in the same run against the same
// sink, a bare pipelining SMTP client loop with the same connection
// count. The first worker writes a CPU profile (var/bench/worker.cpu).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/apiclient"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/render"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
)

type options struct {
	n, workers, conns int
	dbName, redis     string
	addr              string
	noPipelining      bool
	sink              string // "postfix" or "inproc"
	automation        bool
	drill             string // "", "pg" or "redis"
	webhook           bool   // a webhook wanting every event, to a receiver in this process
	trackedLinks      bool   // the template's links are plain addresses, tracked unless CLICK_TRACKING=off
	relays            int    // SMTP_URL names this many relays, all to the sink, sharing the connections
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 100_000, "contacts in the main list (the send's audience is about this)")
	flag.IntVar(&o.workers, "workers", 1, "worker processes")
	flag.IntVar(&o.conns, "conns", 16, "SMTP connections per worker (SMTP_URL pool=) and of the bare client")
	flag.StringVar(&o.dbName, "db", "mailroom_bench_send", "database to create afresh")
	flag.StringVar(&o.redis, "redis", "redis://127.0.0.1:6379/15", "Redis database to flush and use")
	flag.StringVar(&o.addr, "addr", "127.0.0.1:18099", "the API's address")
	flag.BoolVar(&o.noPipelining, "no-pipelining", false, "the sink hides PIPELINING (the engine must still work)")
	flag.StringVar(&o.sink, "sink", "postfix", "where the mails go: postfix (Postfix's smtp-sink, a real MTA in its own process; installed when missing; the drills count its dump) or inproc (the project's sink in this process)")
	flag.BoolVar(&o.automation, "automation", false, "instead of a single send: N contacts imported into a live welcome automation with an instant mail")
	flag.StringVar(&o.drill, "drill", "", "a fault mid-send (docs/operations.md): pg (restart PostgreSQL), redis (stop Redis for 30 s) or kill (SIGKILL the workers at 28 % and start them again)")
	flag.BoolVar(&o.trackedLinks, "tracked-links", false, "the template's four links are plain addresses (tracked unless CLICK_TRACKING=off) rather than ones holding ((postal_code)) (never tracked)")
	flag.BoolVar(&o.webhook, "webhook", false, "the account has a webhook wanting every event, posting to a receiver in this process that checks signatures")
	flag.IntVar(&o.relays, "relays", 1, "SMTP_URL names this many relays (the mails split evenly between them), all to the sink, each with its share of -conns: what routing among relays costs")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-send:", err)
		os.Exit(1)
	}
}

// smtpURL is SMTP_URL for relays relays to addr sharing conns
// connections (one relay: the plain URL).
func smtpURL(addr string, conns, relays int) string {
	if relays <= 1 {
		return "smtp://" + addr + "?pool=" + strconv.Itoa(conns)
	}
	var urls []string
	for i := range relays {
		urls = append(urls, fmt.Sprintf("smtp://%s?pool=%d&name=r%d", addr, max(1, conns/relays), i+1))
	}
	return strings.Join(urls, " ")
}

func run(ctx context.Context, o options) error {
	dir := filepath.Join("var", "bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The drills count each recipient's mails: the in-process sink keeps
	// them, smtp-sink dumps every transaction to a file.
	var sink mailSink
	var inproc *smtptest.Sink
	switch o.sink {
	case "inproc":
		s, err := smtptest.StartSink("127.0.0.1:0", o.noPipelining)
		if err != nil {
			return err
		}
		if o.drill != "" {
			s.KeepRecipients()
		}
		sink, inproc = inprocSink{s}, s
	case "postfix":
		var dump string
		if o.drill != "" {
			abs, err := filepath.Abs(filepath.Join(dir, "sink-dump"))
			if err != nil {
				return err
			}
			dump = abs
			os.RemoveAll(dump)
			defer os.RemoveAll(dump)
		}
		s, err := startPostfixSink(!o.noPipelining, dump)
		if err != nil {
			return err
		}
		sink = s
	default:
		return fmt.Errorf("-sink %q: postfix or inproc", o.sink)
	}
	defer sink.Close()
	dsn := "postgres://postgres@127.0.0.1:5432/" + o.dbName + "?sslmode=disable"
	if err := dropDatabase(ctx, o.dbName); err != nil {
		return err
	}
	if err := exec.CommandContext(ctx, "redis-cli", "-u", o.redis, "FLUSHDB").Run(); err != nil {
		return fmt.Errorf("flushing %s: %w", o.redis, err)
	}
	env := append(os.Environ(), "DATABASE_URL="+dsn, "REDIS_URL="+o.redis, "HTTP_ADDR="+o.addr,
		"PUBLIC_URL=http://"+o.addr, "SMTP_URL="+smtpURL(sink.Addr(), o.conns, o.relays),
		"ALLOW_UNVERIFIED_SENDERS=true", "LOG_LEVEL="+logLevel(), "MAX_UPLOAD_BYTES=4GB", "WEBHOOK_ALLOW_PRIVATE=true")
	// Metrics are kept and served as in production: on any free port, so
	// that workers never clash, unless WORKER_METRICS_ADDR names one (to
	// watch a one-worker run in Prometheus).
	if os.Getenv("WORKER_METRICS_ADDR") == "" {
		env = append(env, "WORKER_METRICS_ADDR=127.0.0.1:0")
	}
	if out, err := command(ctx, env, "bin/api", "migrate").CombinedOutput(); err != nil {
		return fmt.Errorf("migrate: %v\n%s", err, out)
	}
	api, err := start(ctx, env, filepath.Join(dir, "api.log"), "bin/api")
	if err != nil {
		return err
	}
	defer stop(api)
	base := "http://" + o.addr
	if err := apiclient.WaitHTTP(base + "/healthz"); err != nil {
		return err
	}
	out, err := command(ctx, env, "bin/api", "accounts", "create", "--name", "bench").Output()
	if err != nil {
		return fmt.Errorf("accounts create: %w", err)
	}
	var keys struct {
		Public string `json:"public_key"`
		Secret string `json:"secret_key"`
	}
	if err := json.Unmarshal(out, &keys); err != nil {
		return err
	}
	c := &client{&apiclient.Client{Base: base + "/api", Public: keys.Public, Secret: keys.Secret}}

	if o.automation {
		return runAutomation(ctx, o, c, env, dir, sink)
	}
	fmt.Printf("bench-send: N=%d, workers=%d, conns=%d, pipelining=%v, webhook=%v, tracked links=%v, CLICK_TRACKING=%q\n",
		o.n, o.workers, o.conns, !o.noPipelining, o.webhook, o.trackedLinks, os.Getenv("CLICK_TRACKING"))
	var hooks *hookReceiver
	if o.webhook {
		if hooks, err = startHookReceiver(); err != nil {
			return err
		}
		defer hooks.Close()
		if err := hooks.subscribe(c); err != nil {
			return err
		}
	}
	t0 := time.Now()
	listA, err := c.listWithContacts(ctx, "main list", 0, o.n)
	if err != nil {
		return err
	}
	// The second list overlaps the first on a tenth of it and adds as many
	// again: the send must mail each address once.
	listB, err := c.listWithContacts(ctx, "second list", o.n-o.n/10, o.n/10*2)
	if err != nil {
		return err
	}
	if _, err := c.Call("POST", "/global-unsubscribes/save", url.Values{"email_address": {strings.Join(suppressedAddresses(o.n), ",")}}); err != nil {
		return err
	}
	fmt.Printf("  import of %d + %d contacts: %v\n", o.n, o.n/10*2, time.Since(t0).Round(time.Millisecond))
	var listC int64 // the drills' second send: 100 addresses of their own
	if o.drill != "" {
		if listC, err = c.listWithContacts(ctx, "drill list", 3*o.n, 100); err != nil {
			return err
		}
	}

	group, sender, err := c.groupAndSender()
	if err != nil {
		return err
	}

	workers, err := startWorkers(ctx, o, env, dir)
	if err != nil {
		return err
	}
	defer func() {
		for _, w := range workers {
			stop(w)
		}
	}()
	time.Sleep(time.Second) // the workers connect and migrate (a no-op)

	sink.Reset()
	var workerPIDs []int
	for _, w := range workers {
		workerPIDs = append(workerPIDs, w.Process.Pid)
	}
	cpu0 := cpuNow(workerPIDs, api.Process.Pid, sink.PID(), o.dbName)
	created := time.Now()
	res, err := c.Call("POST", "/single/send/create", url.Values{
		"template_id": {"1"}, "template_html": {mailHTML(o.trackedLinks)}, "sender_id": {strconv.FormatInt(sender, 10)},
		"unsubscribe_group_id": {strconv.FormatInt(group, 10)}, "single_send_name": {"Bench"},
		"subject": {"Hello ((first_name)), this week's picks"}, "preheader": {"Fresh picks for ((first_name))"},
		"recipient_id[0]": {"contacts_" + strconv.FormatInt(listA, 10)}, "recipient_id[1]": {"contacts_" + strconv.FormatInt(listB, 10)},
		"schedule_type": {"0"},
	})
	if err != nil {
		return err
	}
	var made struct {
		UTR string `json:"utr"`
	}
	if err := json.Unmarshal(res, &made); err != nil || made.UTR == "" {
		return fmt.Errorf("create answered %s", res)
	}
	var send sendState
	deadline := time.Now().Add(time.Duration(o.n/500+120) * time.Second)
	var fault *drill
	var kill *killDrill
	for send.Status != 3 {
		if time.Now().After(deadline) {
			return fmt.Errorf("the send did not complete: %+v, sink %d mails", send, sink.Mails())
		}
		time.Sleep(20 * time.Millisecond)
		if o.drill == "kill" {
			if kill == nil && sink.Mails() >= int64(o.n*28/100) {
				if kill, err = killWorkers(ctx, o, env, dir, workers, sink); err != nil {
					return err
				}
				workers = kill.restarted
			}
			if kill != nil {
				kill.watch(sink)
			}
		} else if o.drill != "" && fault == nil && sink.Mails() >= int64(o.n/3) {
			fault = startDrill(o, c, sink, base, listC, group, sender)
		}
		now, err := c.sendState(made.UTR)
		if err != nil && fault != nil {
			continue // the fault: the API answers again once it is over
		}
		if err != nil {
			return err
		}
		send = now
	}
	done := time.Now()
	if fault != nil {
		return fault.check(o, c, sink, send.Delivered)
	}
	if kill != nil {
		return kill.check(o, sink, send.Delivered)
	}
	settle(sink) // the send's last mails counted
	mails := sink.Mails()
	size, sizeFrom := int64(0), "on average"
	if inproc != nil {
		size = inproc.Bytes() / max(1, mails)
	} else if size, err = oneMailSize(o); err != nil { // smtp-sink counts mails, not bytes
		return err
	} else {
		sizeFrom = "(one of them as render builds it)"
	}
	elapsed := done.Sub(created)
	var hookReport string
	if hooks != nil { // the workers post the last events after the send completed
		hookReport = hooks.wait(send.Delivered, done, 2*time.Minute)
	}
	cpu := cpuNow(workerPIDs, api.Process.Pid, sink.PID(), o.dbName).minus(cpu0)
	var peak []string
	for _, w := range workers {
		peak = append(peak, fmt.Sprintf("%d MB", vmHWM(w.Process.Pid)>>10))
	}
	expansion := expansionMS(filepath.Join(dir, "worker0.log"), o.workers, dir)
	for _, w := range workers {
		stop(w)
	}
	workers = nil

	fmt.Printf("  send: triggered %d, delivered %d, bounces %d; the sink (%s) took %d mails of %d bytes %s\n",
		send.Triggered, send.Delivered, send.Bounces, o.sinkName(), mails, size, sizeFrom)
	fmt.Printf("  time to first mail: %v (create -> first mail accepted)\n", sink.First().Sub(created).Round(time.Millisecond))
	fmt.Printf("  expansion: %s\n", expansion)
	fmt.Printf("  end to end (create -> status 3): %v, %.0f mails/s\n", elapsed.Round(time.Millisecond), float64(mails)/elapsed.Seconds())
	fmt.Printf("  worker peak RSS: %s\n", strings.Join(peak, ", "))
	if hooks != nil {
		fmt.Printf("  webhook: %s\n", hookReport)
	}
	fmt.Printf("  CPU of the send (create -> status 3, and its webhook events posted): %v; per 1,000 mails %.1f ms, %.1f ms of the service's processes\n",
		cpu, cpu.total()*1e6/float64(max(1, mails)), (cpu.total()-cpu.bench-cpu.sink)*1e6/float64(max(1, mails)))
	if err := c.checkStats(made.UTR, send, mails); err != nil {
		return err
	}

	// The bare client, same sink, same connection count, same size.
	sink.Reset()
	bareCPU0 := procCPU(sink.PID())
	bare, err := bareClient(sink.Addr(), o.conns*o.workers, int(mails), int(size), !o.noPipelining)
	if err != nil {
		return err
	}
	fmt.Printf("  bare SMTP client, %d connections, %d mails: %.0f mails/s\n", o.conns*o.workers, mails, bare)
	if sink.PID() != 0 {
		fmt.Printf("  smtp-sink CPU per 1,000 mails: %.1f ms under the send, %.1f ms under the bare client\n",
			cpu.sink*1e6/float64(max(1, mails)), (procCPU(sink.PID())-bareCPU0)*1e6/float64(max(1, mails)))
	}
	fmt.Printf("  ratio end to end / bare client: %.2f\n", float64(mails)/elapsed.Seconds()/bare)
	fmt.Printf("  worker CPU profile: go tool pprof -top bin/worker %s\n", filepath.Join(dir, "worker.cpu"))
	return nil
}

// client calls the API with an account's keys.
type client struct{ *apiclient.Client }

// listWithContacts makes a contact type and imports contacts from..from+n
// into it by CSV upload, streamed.
func (c *client) listWithContacts(ctx context.Context, name string, from, n int) (int64, error) {
	return c.ContactType(ctx, name, contactRows(from, n))
}

func address(i int) string { return fmt.Sprintf("user%07d@bench.example", i) }

// suppressedAddresses are the 100 addresses of the main list (of n) the
// benchmark unsubscribes globally before its send.
func suppressedAddresses(n int) []string {
	var out []string
	for i := 0; i < n && len(out) < 100; i += max(1, n/100) {
		out = append(out, address(i))
	}
	return out
}

// sendState is what the benchmark reads of a send's details.
type sendState struct {
	Status    int   `json:"status"`
	Triggered int64 `json:"triggered"`
	Delivered int64 `json:"delivered"`
	Bounces   int64 `json:"bounces"`
}

// sendState reads the send of utr through /single-send/details.
func (c *client) sendState(utr string) (sendState, error) {
	b, err := c.Call("GET", "/single-send/details?utr="+utr, nil)
	if err != nil {
		return sendState{}, err
	}
	var d struct {
		SingleSend []sendState `json:"singleSend"`
	}
	if err := json.Unmarshal(b, &d); err != nil || len(d.SingleSend) != 1 {
		return sendState{}, fmt.Errorf("details answered %s", b)
	}
	return d.SingleSend[0], nil
}

// checkStats reads the send's statistics five times, reports the fastest
// and slowest answer, and holds them to the send's details and the sink.
func (c *client) checkStats(utr string, send sendState, mails int64) error {
	var st struct {
		Triggered int64 `json:"triggered"`
		Delivered int64 `json:"delivered"`
		Bounces   int64 `json:"bounces"`
	}
	var fastest, slowest time.Duration
	for i := range 5 {
		t0 := time.Now()
		b, err := c.Call("GET", "/single-send/stats?utr="+utr, nil)
		took := time.Since(t0)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("stats answered %s", b)
		}
		if i == 0 || took < fastest {
			fastest = took
		}
		slowest = max(slowest, took)
	}
	fmt.Printf("  statistics: triggered %d, delivered %d, bounces %d; GET /single-send/stats %v-%v\n",
		st.Triggered, st.Delivered, st.Bounces, fastest.Round(10*time.Microsecond), slowest.Round(10*time.Microsecond))
	if st.Triggered != send.Triggered || st.Delivered != send.Delivered || st.Bounces != send.Bounces || st.Delivered != mails {
		return fmt.Errorf("statistics %+v disagree with the send %+v or the sink's %d mails", st, send, mails)
	}
	return nil
}

// mailHTML is a ~4 KB personalized HTML mail with four shop links: each
// holding the recipient's ((postal_code)) (so never tracked), or, with
// tracked, four plain addresses that click tracking rewrites.
func mailHTML(tracked bool) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><meta charset="utf-8"><title>Picks</title></head><body style="margin:0;background:#f4f5f7">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0"><tr><td align="center">
<table role="presentation" width="600" cellpadding="0" cellspacing="0" style="background:#ffffff;font-family:Helvetica,Arial,sans-serif">
<tr><td style="padding:32px 40px;font-size:24px;font-weight:bold;color:#111">Hello ((first_name)) ((last_name)),</td></tr>
`)
	for i := range 4 {
		link := "https://shop.example/picks?ref=((postal_code))"
		if tracked {
			link = fmt.Sprintf("https://shop.example/picks/%d?utm_campaign=picks", i+1)
		}
		fmt.Fprintf(&b, `<tr><td style="padding:0 40px 16px;font-size:16px;line-height:24px;color:#333">
Here is a pick we think you will like in ((city)): a well-made thing at a fair price, chosen for ((first_name)) by our team.
<a href="%s" style="color:#1f4fa3">See it in the shop</a>.</td></tr>
`, link)
	}
	b.WriteString(`<tr><td style="padding:24px 40px;font-size:12px;color:#777">Sent to ((email)) by ((sender_name)), ((sender_address)).
<a href="((unsubscribe_preferences))" style="color:#777">Unsubscribe or manage your preferences</a></td></tr>
</table></td></tr></table></body></html>`)
	return b.String()
}

func command(ctx context.Context, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	return cmd
}

func start(ctx context.Context, env []string, logPath, name string, args ...string) (*exec.Cmd, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, f, f
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return cmd, nil
}

// stop ends a process with SIGTERM and waits for it (a worker writes its
// profile then).
func stop(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil || cmd.ProcessState != nil {
		return
	}
	cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// vmHWM is a process's peak resident set size in KB.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// expansionMS reads the "send started" line of the worker logs.
func expansionMS(_ string, workers int, dir string) string {
	var steps []string
	for i := range workers {
		b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("worker%d.log", i)))
		for line := range bytes.Lines(b) {
			var l struct {
				Msg   string `json:"msg"`
				MS    int64  `json:"expansion_ms"`
				N     int64  `json:"triggered"`
				Added int64  `json:"added"`
			}
			if json.Unmarshal(line, &l) != nil {
				continue
			}
			switch l.Msg {
			case "send started":
				steps = append(steps, fmt.Sprintf("%d ms for %d recipients", l.MS, l.N))
			case "send expanded":
				steps = append(steps, fmt.Sprintf("then %d ms for %d more", l.MS, l.Added))
			}
		}
	}
	if len(steps) == 0 {
		return "not logged"
	}
	return strings.Join(steps, ", ")
}

// bareClient sends mails of size bytes over conns connections with a
// bare pipelining loop (raw bytes, reply codes only) and answers mails/s.
func bareClient(addr string, conns, mails, size int, pipelining bool) (float64, error) {
	body := strings.Repeat("x", 76) + "\r\n"
	msg := "From: a@bench.example\r\nSubject: bare\r\n\r\n" + strings.Repeat(body, max(1, size/len(body))) + ".\r\n"
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	startAt := time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := func() error {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					return err
				}
				defer c.Close()
				r, w := bufio.NewReader(c), bufio.NewWriterSize(c, 64<<10)
				reply := func() error {
					for {
						line, err := r.ReadString('\n')
						if err != nil {
							return err
						}
						if len(line) < 4 || line[3] != '-' {
							if line[0] != '2' && line[0] != '3' {
								return errors.New(strings.TrimSpace(line))
							}
							return nil
						}
					}
				}
				reply()
				w.WriteString("EHLO bare\r\n")
				w.Flush()
				reply()
				for i := range work {
					if pipelining {
						fmt.Fprintf(w, "MAIL FROM:<a@bench.example>\r\nRCPT TO:<%s>\r\nDATA\r\n", address(i))
						w.Flush()
						for range 3 {
							if err := reply(); err != nil {
								return err
							}
						}
					} else {
						for _, cmd := range []string{"MAIL FROM:<a@bench.example>\r\n", "RCPT TO:<" + address(i) + ">\r\n", "DATA\r\n"} {
							w.WriteString(cmd)
							w.Flush()
							if err := reply(); err != nil {
								return err
							}
						}
					}
					w.WriteString(msg)
					w.Flush()
					if err := reply(); err != nil {
						return err
					}
				}
				return nil
			}()
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
		}()
	}
	for i := range mails {
		work <- i
	}
	close(work)
	wg.Wait()
	return float64(mails) / time.Since(startAt).Seconds(), firstErr
}

// dropDatabase removes the benchmark's database of an earlier run.
func dropDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

// logLevel is the processes' LOG_LEVEL: info unless BENCH_LOG_LEVEL says.
func logLevel() string {
	if v := os.Getenv("BENCH_LOG_LEVEL"); v != "" {
		return v
	}
	return "info"
}

// runAutomation is -automation: the import of N contacts into a contact
// type without, then with, a live welcome automation with an instant
// mail, and the mails that follow.
func runAutomation(ctx context.Context, o options, c *client, env []string, dir string, sink mailSink) error {
	fmt.Printf("bench-automation: N=%d, workers=%d, conns=%d\n", o.n, o.workers, o.conns)
	t0 := time.Now()
	if _, err := c.listWithContacts(ctx, "baseline", 0, o.n); err != nil {
		return err
	}
	plain := time.Since(t0)
	group, sender, err := c.groupAndSender()
	if err != nil {
		return err
	}
	if _, err := c.Call("POST", "/contacts-type/add", url.Values{"name": {"welcome list"}}); err != nil {
		return err
	}
	typ, err := c.LastID("/contacts-type", "contactTypes")
	if err != nil {
		return err
	}
	b, err := c.Call("POST", "/automations/create", url.Values{"type": {"welcome"}, "automation_name": {"Welcome"},
		"automation_for": {"contacts_" + strconv.FormatInt(typ, 10)}, "unsubscribe_group_id": {strconv.FormatInt(group, 10)}})
	if err != nil {
		return err
	}
	var made struct {
		UTR string `json:"utr"`
	}
	if err := json.Unmarshal(b, &made); err != nil || made.UTR == "" {
		return fmt.Errorf("automation create answered %s", b)
	}
	if _, err := c.Call("POST", "/automations/schedule/create", url.Values{"utr": {made.UTR}, "sender_id": {strconv.FormatInt(sender, 10)},
		"subject": {"Welcome, ((first_name))"}, "waiting_period": {"1"}, "waiting_type": {"instantly"}, "template_id": {"1"},
		"preview_img": {"blank.png"}, "template_html": {mailHTML(o.trackedLinks)}}); err != nil {
		return err
	}
	if _, err := c.Call("GET", "/automations/set-live?utr="+made.UTR, nil); err != nil {
		return err
	}
	workers, err := startWorkers(ctx, o, env, dir)
	if err != nil {
		return err
	}
	defer func() {
		for _, w := range workers {
			stop(w)
		}
	}()
	time.Sleep(time.Second)
	sink.Reset()
	t1 := time.Now()
	if err := c.ImportCSV(ctx, typ, contactRows(0, o.n)); err != nil {
		return err
	}
	withAutomation := time.Since(t1)
	// Done when the automation counts every welcome mail delivered (the
	// sink also takes the sender's verification mail).
	deadline := time.Now().Add(time.Duration(o.n/500+120) * time.Second)
	var delivered int64
	for delivered < int64(o.n) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d welcome mails delivered after the deadline", delivered, o.n)
		}
		time.Sleep(20 * time.Millisecond)
		b, err := c.Call("GET", "/automations/details?utr="+made.UTR, nil)
		if err != nil {
			return err
		}
		var d struct {
			Automation struct {
				Delivered int64 `json:"total_delivered"`
			} `json:"automation"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			return fmt.Errorf("details answered %s", b)
		}
		delivered = d.Automation.Delivered
	}
	done := time.Now()
	var peak []string
	for _, w := range workers {
		peak = append(peak, fmt.Sprintf("%d MB", vmHWM(w.Process.Pid)>>10))
	}
	fmt.Printf("  import of %d contacts, no automation: %v (%.0f rows/s)\n", o.n, plain.Round(time.Millisecond), float64(o.n)/plain.Seconds())
	fmt.Printf("  import of %d contacts into a live welcome automation: %v (%.0f rows/s, %.2f of the plain rate)\n", o.n,
		withAutomation.Round(time.Millisecond), float64(o.n)/withAutomation.Seconds(), plain.Seconds()/withAutomation.Seconds())
	fmt.Printf("  time to first mail: %v after the import began, %v after it ended\n", sink.First().Sub(t1).Round(time.Millisecond),
		sink.First().Sub(t1.Add(withAutomation)).Round(time.Millisecond))
	fmt.Printf("  %d welcome mails delivered: %v from the import's start, %.0f mails/s; from the import's end %.0f mails/s\n", delivered,
		done.Sub(t1).Round(time.Millisecond), float64(delivered)/done.Sub(t1).Seconds(), float64(delivered)/done.Sub(t1.Add(withAutomation)).Seconds())
	fmt.Printf("  worker peak RSS: %s\n", strings.Join(peak, ", "))
	return nil
}

// contactRows writes the CSV of contacts from..from+n.
func contactRows(from, n int) func(w *bufio.Writer) {
	return func(w *bufio.Writer) {
		w.WriteString("email,first_name,last_name,city,postal_code\n")
		for i := from; i < from+n; i++ {
			fmt.Fprintf(w, "%s,First%d,Last%d,Munich,%05d\n", address(i), i, i, i%100000)
		}
	}
}

// startWorkers starts o.workers worker processes; the first writes a CPU
// profile.
func startWorkers(ctx context.Context, o options, env []string, dir string) ([]*exec.Cmd, error) {
	var workers []*exec.Cmd
	for i := range o.workers {
		wenv := env
		if i == 0 {
			wenv = append(append([]string(nil), env...), "CPU_PROFILE="+filepath.Join(dir, "worker.cpu"))
		}
		w, err := start(ctx, wenv, filepath.Join(dir, fmt.Sprintf("worker%d.log", i)), "bin/worker")
		if err != nil {
			for _, w := range workers {
				stop(w)
			}
			return nil, err
		}
		workers = append(workers, w)
	}
	return workers, nil
}

// groupAndSender makes an unsubscribe group and a sender (unverified: the
// benchmark's API runs with ALLOW_UNVERIFIED_SENDERS).
func (c *client) groupAndSender() (group, sender int64, err error) {
	if _, err := c.Call("POST", "/unsubscribes-groups/save", url.Values{"group_name": {"News"}, "description": {"News"}, "is_display": {"1"}}); err != nil {
		return 0, 0, err
	}
	if group, err = c.LastID("/unsubscribes-groups", "unsubscribesGroups"); err != nil {
		return 0, 0, err
	}
	if _, err := c.Call("POST", "/sender/save", url.Values{"from_name": {"Bench Shop"}, "from_email": {"news@bench.example"},
		"reply_to_email": {"help@bench.example"}, "country_id": {"276"}, "company_address": {"Marienplatz 1"}, "nickname": {"bench"}}); err != nil {
		return 0, 0, err
	}
	sender, err = c.LastID("/senders", "senders")
	return group, sender, err
}

func (o options) sinkName() string {
	if o.sink == "inproc" {
		return "in-process"
	}
	return "Postfix's smtp-sink"
}

// oneMailSize is the bytes of one of the send's mails, built by render
// from the send's template, subject, preheader and sender for one of its
// recipients (no DKIM): the bare client sends mails of this size when the
// sink (smtp-sink) does not count bytes.
func oneMailSize(o options) (int64, error) {
	tp, err := render.Compile("Hello ((first_name)), this week's picks", "Fresh picks for ((first_name))", mailHTML(o.trackedLinks))
	if err != nil {
		return 0, err
	}
	s := &mail.Sender{FromName: "Bench Shop", FromEmail: "news@bench.example", ReplyTo: "help@bench.example", Address: "Marienplatz 1"}
	r := &mail.Recipient{Email: mail.Email(address(54321)), FirstName: "First54321", LastName: "Last54321", City: "Munich", PostalCode: "54321",
		Tokens: mail.Tokens{Unsubscribe: strings.Repeat("t", 60), UnsubscribeURL: "http://" + o.addr + "/unsubscribe/" + strings.Repeat("t", 60),
			OpenPixelURL: "http://" + o.addr + "/o/" + strings.Repeat("p", 80)}}
	var b render.Buffer
	f := render.NewForm(tp, s, render.FormOptions{SendID: 1, UnsubscribeMailto: "unsubscribe@localhost"})
	return int64(len(f.Build(nil, &b, r, 54321))), nil
}
