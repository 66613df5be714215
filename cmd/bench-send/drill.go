package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// drill is a fault made mid-send (-drill): PostgreSQL restarted, or Redis
// stopped for 30 s while the API is asked to accept and store a second
// send; check then holds the outcome to the sink.
type drill struct {
	kind string
	mu   sync.Mutex
	log  []string
	err  error
	utr  string // the send made while Redis was down
	done chan struct{}
}

func (d *drill) note(format string, args ...any) {
	d.mu.Lock()
	d.log = append(d.log, fmt.Sprintf(format, args...))
	d.mu.Unlock()
}

// flowed notes how long after back the sink took its next mail (the
// fault over: mail flows again), waiting up to two minutes.
func (d *drill) flowed(sink mailSink, back time.Time) {
	settle(sink)
	at := sink.Mails()
	for time.Since(back) < 2*time.Minute {
		if sink.Mails() > at {
			d.note("mail flowed again %.1f s after that", time.Since(back).Seconds())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.note("no mail in the two minutes after that")
}

func startDrill(o options, c *client, sink mailSink, base string, listC, group, sender int64) *drill {
	d := &drill{kind: o.drill, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		t0 := time.Now()
		switch o.drill {
		case "pg":
			out, err := exec.Command("pg_ctlcluster", "--skip-systemctl-redirect", "15", "main", "restart").CombinedOutput()
			if err != nil {
				d.err = fmt.Errorf("restarting PostgreSQL: %v %s", err, out)
				return
			}
			d.note("PostgreSQL restarted in %v", time.Since(t0).Round(time.Millisecond))
			d.flowed(sink, time.Now())
		case "redis":
			exec.Command("redis-cli", "-h", "127.0.0.1", "-p", "6379", "shutdown", "nosave").Run()
			d.note("Redis stopped")
			time.Sleep(2 * time.Second)
			// /readyz says what is down.
			if resp, err := http.Get(base + "/readyz"); err == nil {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
				resp.Body.Close()
				d.note("/readyz while Redis is down: %d %s", resp.StatusCode, strings.TrimSpace(string(b)))
			}
			// The API still takes and stores a send.
			res, err := c.Call("POST", "/single/send/create", url.Values{
				"template_id": {"1"}, "template_html": {"<p>Hi ((first_name)), sent while Redis was down</p>"},
				"sender_id": {strconv.FormatInt(sender, 10)}, "unsubscribe_group_id": {strconv.FormatInt(group, 10)},
				"single_send_name": {"Drill"}, "subject": {"Drill"}, "preheader": {"p"},
				"recipient_id[0]": {"contacts_" + strconv.FormatInt(listC, 10)}, "schedule_type": {"0"},
			})
			var made struct {
				UTR string `json:"utr"`
			}
			if err != nil || json.Unmarshal(res, &made) != nil || made.UTR == "" {
				d.err = fmt.Errorf("creating a send while Redis was down: %v %s", err, res)
			} else {
				d.utr = made.UTR
				d.note("a send created while Redis was down (%v after the stop)", time.Since(t0).Round(time.Millisecond))
			}
			time.Sleep(30*time.Second - time.Since(t0))
			out, err := exec.Command("redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "--port", "6379",
				"--save", "", "--appendonly", "no").CombinedOutput()
			if err != nil {
				d.err = fmt.Errorf("starting Redis: %v %s", err, out)
				return
			}
			d.note("Redis started again after %v (empty: every queued task lost)", time.Since(t0).Round(time.Millisecond))
			d.flowed(sink, time.Now())
		}
	}()
	return d
}

// check waits for the drill's own send, then holds the sink to the
// counters: every expected address exactly once, no suppressed address,
// the delivered counters equal to what the sink took.
func (d *drill) check(o options, c *client, sink mailSink, delivered int64) error {
	<-d.done
	if d.err != nil {
		return d.err
	}
	total := delivered
	if d.utr != "" {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if st, err := c.sendState(d.utr); err == nil && st.Status == 3 {
				total += st.Delivered
				d.note("the send made while Redis was down completed: %d delivered", st.Delivered)
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the send made while Redis was down did not complete")
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	got := sink.Recipients()
	suppressed := suppressedSet(o.n)
	var missing, twice, toSuppressed, sum int
	want := map[string]bool{}
	for i := 0; i < o.n+o.n/10; i++ {
		if !suppressed[address(i)] {
			want[address(i)] = true
		}
	}
	if d.utr != "" {
		for i := 3 * o.n; i < 3*o.n+100; i++ {
			want[address(i)] = true
		}
	}
	for a := range want {
		switch got[a] {
		case 0:
			missing++
		case 1:
		default:
			twice++
		}
	}
	var others []string // not the sends' (the sender's verification mail)
	for a, n := range got {
		switch {
		case want[a]:
			sum += n
		case suppressed[a]:
			toSuppressed += n
		default:
			others = append(others, fmt.Sprintf("%s×%d", a, n))
		}
	}
	fmt.Printf("drill %s:\n", d.kind)
	for _, l := range d.log {
		fmt.Printf("  %s\n", l)
	}
	fmt.Printf("  addresses expected %d: missing %d, more than one mail %d; mails to suppressed addresses %d\n", len(want), missing, twice, toSuppressed)
	fmt.Printf("  delivered counters %d, mails the sink took for the sends' addresses %d (other mail: %s)\n", total, sum, strings.Join(others, ", "))
	if missing > 0 || twice > 0 || toSuppressed > 0 || int64(sum) != total {
		return fmt.Errorf("drill %s failed", d.kind)
	}
	fmt.Printf("  PASS\n")
	return nil
}

// killDrill is -drill kill: every worker SIGKILLed mid-send (at 28 % of
// the audience in the sink) and started again at once, as a crashed host
// or an OOM kill would leave a send; check reports when mail flowed again,
// what was lost (must be nothing) and how many mails went twice (the
// mails handed to the sink whose outcome the killed worker had not yet
// recorded).
type killDrill struct {
	restarted []*exec.Cmd
	atKill    int64     // mails in the sink when the workers were dead
	started   time.Time // the new workers started
	resumed   time.Time // the first mail after that
}

func killWorkers(ctx context.Context, o options, env []string, dir string, workers []*exec.Cmd, sink mailSink) (*killDrill, error) {
	for _, w := range workers {
		w.Process.Kill()
		w.Wait()
	}
	settle(sink) // the mails it took before the kill all counted
	k := &killDrill{atKill: sink.Mails()}
	for i := range workers { // the profile of the killed worker 0 is lost with it
		os.Rename(filepath.Join(dir, fmt.Sprintf("worker%d.log", i)), filepath.Join(dir, fmt.Sprintf("worker%d-killed.log", i)))
	}
	var err error
	k.restarted, err = startWorkers(ctx, o, env, dir)
	k.started = time.Now()
	return k, err
}

// watch notes the first mail after the restart.
func (k *killDrill) watch(sink mailSink) {
	if k.resumed.IsZero() && sink.Mails() > k.atKill {
		k.resumed = time.Now()
	}
}

func (k *killDrill) check(o options, sink mailSink, delivered int64) error {
	got := sink.Recipients()
	suppressed := suppressedSet(o.n)
	var missing, twice, extra, toSuppressed int
	for i := 0; i < o.n+o.n/10; i++ {
		a := address(i)
		switch n := got[a]; {
		case suppressed[a]:
			toSuppressed += n
		case n == 0:
			missing++
		case n > 1:
			twice++
			extra += n - 1
		}
	}
	fmt.Printf("drill kill:\n")
	fmt.Printf("  workers SIGKILLed with %d mails in the sink (%.1f %% of the audience), started again at once\n",
		k.atKill, 100*float64(k.atKill)/float64(delivered))
	fmt.Printf("  mail flowed again %.1f s after the new workers started\n", k.resumed.Sub(k.started).Seconds())
	fmt.Printf("  lost (never in the sink) %d; addresses with more than one mail %d (%d mails twice); mails to suppressed addresses %d\n",
		missing, twice, extra, toSuppressed)
	settle(sink)
	fmt.Printf("  delivered counters %d, sink %d mails\n", delivered, sink.Mails())
	if missing > 0 || toSuppressed > 0 || k.resumed.IsZero() {
		return fmt.Errorf("drill kill failed")
	}
	fmt.Printf("  PASS (nothing lost)\n")
	return nil
}

// suppressedSet is suppressedAddresses(n) as a set.
func suppressedSet(n int) map[string]bool {
	set := map[string]bool{}
	for _, a := range suppressedAddresses(n) {
		set[a] = true
	}
	return set
}
