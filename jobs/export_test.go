package jobs

import (
	"context"

	"github.com/mailroom/mailroom/internal/mail"
)

// CountMail is Metrics.mail, for the benchmark.
func CountMail(m *Metrics, o *mail.Outcome) { m.mail(o) }

// TryLater is tryLater, for its table test.
var TryLater = tryLater

// PlanDomains plans a range's mails under d.Domains as a range does and
// gives back the in-flight slots it took, for the benchmark: it answers
// how many mails the plan put off.
func PlanDomains(ctx context.Context, d Deps, claimed []mail.Claimed) int {
	p := d.planDomains(ctx, 0, claimed)
	p.release(ctx)
	if p == nil {
		return 0
	}
	return len(p.putOff)
}
