package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/mailroom/mailroom/internal/delivery"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// PartitionSends is how many sends' deliveries share a partition
// (deliveries_p{n} holds sends [n*PartitionSends, (n+1)*PartitionSends)).
const PartitionSends = 10000

// Dispatch is what a dispatch did (the engine's type).
type Dispatch = delivery.Dispatch

// DispatchSend expands send id, when it is still ready, of version and
// due, into its deliveries in one set-based statement, and marks it
// running (single_send.started recorded), all in one transaction: run
// twice, the second finds it running and does nothing. A send with no
// recipient is completed at once.
//
// A send to contact types alone whose largest holds more than 2*step
// contacts is expanded in two steps (step > 0): here the addresses up to
// the one step places into that list (its first mails go at once), and
// the rest by ExpandRest; Dispatch.Expanding says the rest is to come,
// the send cannot complete before, and single_send.started is recorded
// then, with the whole count.
func (d *DB) DispatchSend(ctx context.Context, id int64, version int32, batchSize, step int) (Dispatch, error) {
	out := Dispatch{SendID: id, BatchSize: batchSize}
	if err := d.ensurePartition(ctx, id); err != nil {
		return out, err
	}
	err := d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		out = Dispatch{SendID: id, BatchSize: batchSize}
		s, err := q.LockSendForDispatch(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // deleted
		}
		if err != nil {
			return err
		}
		if s.Status != 1 || s.Version != version {
			return nil // updated since, started already, or a draft
		}
		if s.NotDue { // the database's clock decides
			out.DueAt = s.DueAt
			return nil
		}
		audience, err := audienceOf(id, s.UserID, s.UnsubscribeGroupID, s.RecipientID, s.ExcludeSpecificRecipientID)
		if err != nil {
			return err
		}
		types, segments, exTypes, exSegments := audience.TypeIds, audience.SegmentIds, audience.ExcludeTypeIds, audience.ExcludeSegmentIds
		// A segment between rebuild steps has half its membership old:
		// the send waits for the rebuild (the API's resumer finishes it).
		if busy, err := q.SegmentsRebuilding(ctx, append(append([]int64{}, segments...), exSegments...)); err != nil || busy {
			out.DueAt = new(time.Now().Add(2 * time.Second))
			return err
		}
		until, err := expandBoundary(ctx, q, s.UserID, types, segments, step)
		if err != nil {
			return err
		}
		var n int64
		if until != "" {
			n, err = q.ExpandSendUpTo(ctx, db.ExpandSendUpToParams{SendID: id, UserID: s.UserID, TypeIds: types, SegmentIds: segments,
				GroupID: s.UnsubscribeGroupID, ExcludeTypeIds: exTypes, ExcludeSegmentIds: exSegments, Until: until})
		} else {
			n, err = q.ExpandSend(ctx, audience)
		}
		if err != nil {
			return err
		}
		bs := int32(batchSize)
		if err := bumpSend(ctx, q, id, mail.Counts{Triggered: n}); err != nil {
			return err
		}
		first, err := q.StartSend(ctx, db.StartSendParams{Triggered: n, BatchSize: &bs, ID: id})
		if err != nil {
			return err
		}
		// The addresses the audience leaves out for being suppressed are
		// told now, for the whole audience, before any mail of it went.
		if err := d.emitDroppedAudience(ctx, q, id, audience, n); err != nil {
			return err
		}
		if until != "" {
			if err := q.SetExpandAfter(ctx, db.SetExpandAfterParams{After: until, ID: id}); err != nil {
				return err
			}
		} else if err := q.RecordSendEvent(ctx, db.RecordSendEventParams{UserID: s.UserID, Kind: mail.EventSingleSendStarted,
			SendID: &id, Payload: fmt.Appendf(nil, `{"triggered": %d}`, n)}); err != nil {
			return err
		}
		// Ids are not contiguous when dispatches overlap: the last is read.
		last, err := q.LastDeliveryID(ctx, id)
		if err != nil {
			return err
		}
		out.Started, out.First, out.Last, out.Triggered, out.Expanding = true, first, last, n, until != ""
		if n == 0 && until == "" {
			out.Completed, err = completeSend(ctx, q, id)
		}
		return err
	})
	return out, err
}

// expandBoundary is where the first step of a large send's expansion ends
// ("": in one step): the address step places into its largest contact
// type, when the send goes to contact types alone and that list holds
// more than 2*step contacts.
func expandBoundary(ctx context.Context, q *db.Queries, userID int64, types, segments []int64, step int) (string, error) {
	if step <= 0 || len(types) == 0 || len(segments) > 0 {
		return "", nil
	}
	sizes, err := q.AudienceListSizes(ctx, db.AudienceListSizesParams{UserID: userID, TypeIds: types, SegmentIds: segments})
	if err != nil {
		return "", err
	}
	large, _ := largestOf(sizes) // of contact types: no segment here
	if large.N <= 2*int64(step) {
		return "", nil
	}
	at, err := q.ExpandBoundary(ctx, db.ExpandBoundaryParams{TypeID: large.Key, N: int64(step)})
	if err != nil || len(at) == 0 {
		return "", err
	}
	return at[0], nil
}

// ExpandRest expands the rest of a send DispatchSend started in two steps:
// its audience now less the first step's rows (ExpandSendRest), counted,
// the send's audience then whole (single_send.started recorded with the
// whole count), in one transaction that takes the send's row and its
// statistics last, after the insert (the first step's batches record
// meanwhile). Run twice, or for a send whose audience is whole, it does
// nothing. Dispatch.From is the first id it inserted. An address
// suppressed between the two steps is left out without a dropped event
// (the dispatch told those of the whole audience then).
func (d *DB) ExpandRest(ctx context.Context, id int64) (Dispatch, error) {
	out := Dispatch{SendID: id}
	err := d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		out = Dispatch{SendID: id}
		// One expansion of a send at a time: another running, this one
		// ends at once (the sweeper asks again if that one fails), rather
		// than hold a worker slot while it waits.
		var mine bool
		if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock(1954115687, ($1::bigint % 2147483647)::int)", id).Scan(&mine); err != nil || !mine {
			return err
		}
		// The audience's rows are one hash pass each, as the one-step
		// expansion's: the planner expects a few hundred rows from the
		// DISTINCT ON and took each of the first step's rows as the inner
		// side of a nested loop over the whole audience (minutes at a
		// million).
		if _, err := tx.Exec(ctx, "SELECT set_config('enable_nestloop', 'off', true)"); err != nil {
			return err
		}
		s, err := q.SendToExpand(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // deleted
		}
		if err != nil || s.Status != 2 || s.ExpandAfter == "" {
			return err
		}
		a, err := audienceOf(id, s.UserID, s.UnsubscribeGroupID, s.RecipientID, s.ExcludeSpecificRecipientID)
		if err != nil {
			return err
		}
		rest, err := q.ExpandSendRest(ctx, db.ExpandSendRestParams{SendID: id, UserID: a.UserID, TypeIds: a.TypeIds,
			SegmentIds: a.SegmentIds, GroupID: a.GroupID, ExcludeTypeIds: a.ExcludeTypeIds, ExcludeSegmentIds: a.ExcludeSegmentIds})
		if err != nil {
			return err
		}
		if err := q.RecordSendEvent(ctx, db.RecordSendEventParams{UserID: s.UserID, Kind: mail.EventSingleSendStarted,
			SendID: &id, Payload: fmt.Appendf(nil, `{"triggered": %d}`, s.Triggered+rest.N)}); err != nil {
			return err
		}
		last, err := q.LastDeliveryID(ctx, id)
		if err != nil {
			return err
		}
		// The shared rows last, the statistics then the send's (as a
		// batch's record takes them).
		if err := bumpSend(ctx, q, id, mail.Counts{Triggered: rest.N}); err != nil {
			return err
		}
		whole, err := q.FinishExpansion(ctx, db.FinishExpansionParams{N: rest.N, FirstID: rest.FirstID, ID: id, After: s.ExpandAfter})
		if errors.Is(err, pgx.ErrNoRows) {
			return errSendGone // deleted or stopped meanwhile: nothing of this is kept
		}
		if err != nil {
			return err
		}
		out.Started, out.First, out.From, out.Last, out.Triggered = true, whole.FirstDeliveryID, rest.FirstID, last, rest.N
		out.BatchSize = int(s.BatchSize)
		if whole.Remaining <= 0 {
			out.Completed, err = completeSend(ctx, q, id)
		}
		return err
	})
	if errors.Is(err, errSendGone) {
		return Dispatch{SendID: id}, nil
	}
	return out, err
}

// errSendGone rolls back an expansion whose send was deleted or stopped
// while it ran.
var errSendGone = errors.New("postgres: the send was deleted or stopped during its expansion")

// SendsToExpand are running sends whose rest is still to expand.
func (d *DB) SendsToExpand(ctx context.Context) ([]int64, error) {
	return d.q.SendsToExpand(ctx)
}

// CountAudience is how many recipients a send of account userID to lists,
// less excluded, with unsubscribe group groupID, would have if it were
// dispatched now: the rows the expansion would insert (send_audience, the
// same function ExpandSend reads), counted. Its largest list L, a contact
// type or a segment, is counted as its kept length less its removed
// addresses (CountListAudience: probes per removed address, never the
// list's rows; CountSegmentAudience: the type's suppressed contacts joined
// to the segment's members by id, and probes per exclude-list address),
// and the other lists as their send_audience rows whose address is not in
// L (CountAudienceBeyondList, CountAudienceBeyondSegment: probes per row):
// the audience is L's part and the rest's, which share no address. So a selection of one large
// list and smaller ones costs what the smaller ones hold, and a segment of
// L's own type without hand-stored recipients (all its addresses are L's)
// costs nothing. When the others together hold more than L, the
// expansion's rows are counted as they are: at a million contacts,
// seconds (docs/console.md).
func (d *DB) CountAudience(ctx context.Context, userID int64, lists, excluded []mail.ListRef, groupID int64) (int64, error) {
	types, segments := splitLists(lists)
	exTypes, exSegments := splitLists(excluded)
	var n int64
	err := d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		// The two counts read one snapshot.
		if _, err := tx.Exec(ctx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
			return err
		}
		// Compiling the plan costs more than it saves on one count.
		if _, err := tx.Exec(ctx, "SET LOCAL jit = off"); err != nil {
			return err
		}
		sizes, err := q.AudienceListSizes(ctx, db.AudienceListSizesParams{UserID: userID, TypeIds: types, SegmentIds: segments})
		if err != nil {
			return err
		}
		large, rest := largestOf(sizes)
		if large.Kind == "contact_type" && len(segments) > 0 {
			// A segment of the large list's type with no recipient
			// stored by hand adds no address to it: it is left out.
			within, err := q.SegmentsWithinType(ctx, db.SegmentsWithinTypeParams{UserID: userID, SegmentIds: segments, TypeID: large.Key})
			if err != nil {
				return err
			}
			if len(within) > 0 {
				segments = slices.DeleteFunc(slices.Clone(segments), func(s int64) bool { return slices.Contains(within, s) })
				sizes = slices.DeleteFunc(sizes, func(r db.AudienceListSizesRow) bool { return r.Kind == "segment" && slices.Contains(within, r.Key) })
				large, rest = largestOf(sizes)
			}
		}
		if large.N < 0 || rest > large.N {
			n, err = q.CountAudience(ctx, db.CountAudienceParams{UserID: userID, TypeIds: types, SegmentIds: segments,
				GroupID: groupID, ExcludeTypeIds: exTypes, ExcludeSegmentIds: exSegments})
			return err
		}
		otherTypes, otherSegments := types, segments
		if large.Kind == "segment" {
			otherSegments = slices.DeleteFunc(slices.Clone(segments), func(s int64) bool { return s == large.Key })
			var typeID int64
			typeID, err = q.SegmentContactType(ctx, db.SegmentContactTypeParams{ID: large.Key, UserID: userID})
			if errors.Is(err, pgx.ErrNoRows) {
				typeID, err = 0, nil // not the account's: it adds nobody
			}
			if err == nil {
				n, err = q.CountSegmentAudience(ctx, db.CountSegmentAudienceParams{UserID: userID, SegmentID: large.Key, TypeID: typeID,
					GroupID: groupID, ExcludeTypeIds: exTypes, ExcludeSegmentIds: exSegments})
			}
		} else {
			otherTypes = slices.DeleteFunc(slices.Clone(types), func(t int64) bool { return t == large.Key })
			n, err = q.CountListAudience(ctx, db.CountListAudienceParams{UserID: userID, TypeID: large.Key, GroupID: groupID,
				ExcludeTypeIds: exTypes, ExcludeSegmentIds: exSegments})
		}
		if err != nil || len(otherTypes) == 0 && len(otherSegments) == 0 {
			return err
		}
		var beyond int64
		if large.Kind == "segment" {
			beyond, err = q.CountAudienceBeyondSegment(ctx, db.CountAudienceBeyondSegmentParams{UserID: userID, TypeIds: otherTypes,
				SegmentIds: otherSegments, GroupID: groupID, ExcludeTypeIds: exTypes, ExcludeSegmentIds: exSegments, ListSegmentID: large.Key})
		} else {
			beyond, err = q.CountAudienceBeyondList(ctx, db.CountAudienceBeyondListParams{UserID: userID, TypeIds: otherTypes,
				SegmentIds: otherSegments, GroupID: groupID, ExcludeTypeIds: exTypes, ExcludeSegmentIds: exSegments, ListTypeID: large.Key})
		}
		n += beyond
		return err
	})
	return n, err
}

// largestOf is the list with the most entries among sizes (N -1 when
// there is none) and how many the other lists of sizes hold together.
func largestOf(sizes []db.AudienceListSizesRow) (large db.AudienceListSizesRow, rest int64) {
	large.N = -1
	var total int64
	for _, r := range sizes {
		total += r.N
		if r.N > large.N {
			large = r
		}
	}
	return large, total - max(large.N, 0)
}

// splitLists are lists' contact type ids and segment ids (empty, not nil).
func splitLists(lists []mail.ListRef) (types, segments []int64) {
	types, segments = []int64{}, []int64{}
	for _, l := range lists {
		if l.Table == mail.ListContacts {
			types = append(types, l.ID)
		} else {
			segments = append(segments, l.ID)
		}
	}
	return types, segments
}

// ensurePartition makes the deliveries partitions of send id and of the
// sends after it when they are missing, each in its own short transaction
// (the DDL locks the parent table; the expansion that follows must not
// hold that lock). Making the next one ahead means the lock is rarely
// wanted while a partition is busy; a lock_timeout keeps a wait behind a
// long transaction from stalling every other delivery query (the dispatch
// is retried).
func (d *DB) ensurePartition(ctx context.Context, sendID int64) error {
	n := sendID / PartitionSends
	if err := d.makePartition(ctx, n); err != nil {
		return err
	}
	if err := d.makePartition(ctx, n+1); err != nil {
		d.log.Warn("making the next deliveries partition ahead", "partition", n+1, "err", err)
	}
	return nil
}

func (d *DB) makePartition(ctx context.Context, n int64) error {
	name := "deliveries_p" + strconv.FormatInt(n, 10)
	var exists bool
	if err := d.conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", name).Scan(&exists); err != nil || exists {
		return err
	}
	return begin(ctx, d.Pool, pgx.TxOptions{}, func(tx pgx.Tx, _ *db.Queries) error {
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '2s'"); err != nil {
			return err
		}
		// One maker at a time; the others find it made.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(1954115686, $1::int)", n); err != nil {
			return err
		}
		// fillfactor 70: room on each page for the row's one update (its
		// outcome) to be HOT.
		_, err := tx.Exec(ctx, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s PARTITION OF deliveries FOR VALUES FROM (%d) TO (%d) WITH (fillfactor = 70)",
			name, n*PartitionSends, (n+1)*PartitionSends))
		return err
	})
}

// audienceOf is the expansion's arguments for send id of account userID
// with unsubscribe group groupID and its stored lists and exclude lists.
func audienceOf(id, userID, groupID int64, recipients, excluded string) (db.ExpandSendParams, error) {
	types, segments, err := listIDs(recipients)
	if err != nil {
		return db.ExpandSendParams{}, err
	}
	exTypes, exSegments, err := listIDs(excluded)
	return db.ExpandSendParams{SendID: id, UserID: userID, TypeIds: types, SegmentIds: segments, GroupID: groupID,
		ExcludeTypeIds: exTypes, ExcludeSegmentIds: exSegments}, err
}

// listIDs reads a send's stored lists (decodeLists) into contact type ids
// and segment ids.
func listIDs(raw string) (types, segments []int64, err error) {
	lists, err := decodeLists(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: send lists %q: %w", raw, err)
	}
	types, segments = splitLists(lists)
	return types, segments, nil
}

// completeSend marks the send completed when nothing is left open,
// recording single_send.completed; false when something is (or another
// batch completed it).
func completeSend(ctx context.Context, q *db.Queries, id int64) (bool, error) {
	r, err := q.CompleteSend(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if r.AutomationID != nil {
		return true, nil // an automation's run: its account hears of the automation, not of each run
	}
	return true, q.RecordSendEvent(ctx, db.RecordSendEventParams{UserID: r.UserID, Kind: mail.EventSingleSendCompleted, SendID: &id,
		Payload: fmt.Appendf(nil, `{"triggered": %d, "delivered": %d, "bounces": %d}`, r.Triggered, r.Delivered, r.Bounces)})
}

// BatchSend is what a batch needs of a running send (the engine's type).
type BatchSend = delivery.Send

// SendForBatch reads send id for its batches; ENOTFOUND when it is gone.
func (d *DB) SendForBatch(ctx context.Context, id int64) (BatchSend, error) {
	r, err := d.q.SendForBatch(ctx, id)
	if err != nil {
		return BatchSend{}, err
	}
	s := BatchSend{ID: r.ID, UserID: r.UserID, Version: r.Version, Status: r.Status, TemplateID: r.TemplateID,
		TemplateHTML: r.TemplateHtml, Subject: r.Subject, Preheader: r.Preheader, GroupID: r.UnsubscribeGroupID,
		First: r.FirstDeliveryID, BatchSize: int(r.BatchSize), SenderAvailable: r.FromEmail != "", SendRate: int(r.SendRate), Expanding: r.Expanding,
		Relay: r.Relay,
		Sender: mail.Sender{FromName: r.FromName, FromEmail: mail.Email(r.FromEmail), ReplyTo: mail.Email(r.ReplyToEmail),
			Address: r.CompanyAddress, City: r.City, State: r.State, Country: r.Country}}
	if err := json.Unmarshal([]byte(r.UniqueOpenToken), &s.ListTokens); err != nil {
		return s, fmt.Errorf("postgres: send %d unique_open_token: %w", id, err)
	}
	if r.WarmupDomain != "" && r.WarmupFrom.Valid {
		s.Warmup = &delivery.Warmup{Domain: r.WarmupDomain, From: r.WarmupFrom.Time.UTC(), Schedule: ints(r.WarmupSchedule)}
	}
	return s, nil
}

// ints are int32s as ints (nil for none).
func ints(v []int32) []int {
	if len(v) == 0 {
		return nil
	}
	out := make([]int, len(v))
	for i, n := range v {
		out[i] = int(n)
	}
	return out
}

// Lease is a batch run's hold on one range of a send (the engine's type).
type Lease = delivery.Lease

// ClaimDeliveries leases batch range k of send sendID (ids [from, to))
// for lease and reads its pending, due rows with their recipients, in id
// order. A nil lease: another batch holds the range (or nothing is due).
// Rows whose address was suppressed since the dispatch (groupID is the
// send's unsubscribe group) are skipped first, and the send completed
// when that leaves nothing.
func (d *DB) ClaimDeliveries(ctx context.Context, sendID, groupID, k, from, to int64, lease time.Duration) (*Lease, []mail.Claimed, error) {
	l := &Lease{SendID: sendID, K: k, Owner: uuid.New()}
	taken, err := d.q.LeaseRange(ctx, db.LeaseRangeParams{SendID: sendID, K: k, LeaseSeconds: int32(lease / time.Second), Owner: pgtype.UUID{Bytes: l.Owner, Valid: true}})
	if err != nil {
		return nil, nil, err
	}
	if taken.Paused {
		return nil, nil, delivery.ErrPaused
	}
	if taken.Leased == 0 {
		return nil, nil, nil
	}
	err = d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		skipped, err := q.SkipSuppressed(ctx, db.SkipSuppressedParams{SendID: sendID, FromID: from, ToID: to, GroupID: groupID})
		if err != nil || len(skipped) == 0 {
			return err
		}
		if err := q.TakeRemaining(ctx, db.TakeRemainingParams{N: int64(len(skipped)), ID: sendID}); err != nil {
			return err
		}
		if err := emitSkipped(ctx, q, sendID, skipped); err != nil {
			return err
		}
		_, err = completeSend(ctx, q, sendID)
		return err
	})
	if err != nil {
		return nil, nil, errors.Join(err, d.q.ReleaseRange(ctx, db.ReleaseRangeParams{SendID: sendID, K: k, Owner: pgtype.UUID{Bytes: l.Owner, Valid: true}}))
	}
	rows, err := d.q.ClaimDeliveries(ctx, db.ClaimDeliveriesParams{SendID: sendID, FromID: from, ToID: to})
	if err != nil || len(rows) == 0 { // nothing due here: give the range back at once
		return nil, nil, errors.Join(err, d.q.ReleaseRange(ctx, db.ReleaseRangeParams{SendID: sendID, K: k, Owner: pgtype.UUID{Bytes: l.Owner, Valid: true}}))
	}
	out := make([]mail.Claimed, len(rows))
	for i, r := range rows {
		custom, err := customValues(r.Custom)
		if err != nil {
			// Custom values that do not read are not worth losing a mail
			// over: the placeholders read nothing.
			d.log.Warn("contact custom values do not read", "contact_id", r.ContactID, "err", err)
			custom = nil
		}
		out[i] = mail.Claimed{ID: r.ID, ListKey: r.ListKey, Attempts: int(r.Attempts), Recipient: mail.Recipient{
			ContactID: r.ContactID, Email: mail.Email(r.Email), FirstName: r.FirstName, LastName: r.LastName, AltEmail: r.AltEmail,
			Country: r.Country, State: r.State, City: r.City, AddressLine1: r.AddressLine1, AddressLine2: r.AddressLine2,
			StateProvinceRegion: r.StateProvinceRegion, PostalCode: r.PostalCode, Custom: custom}}
	}
	return l, out, nil
}

// RenewLease extends l for lease; false when the range is no longer l's
// (it stalled past its lease and another batch took it over).
func (d *DB) RenewLease(ctx context.Context, l *Lease, lease time.Duration) (bool, error) {
	n, err := d.q.RenewRange(ctx, db.RenewRangeParams{SendID: l.SendID, K: l.K, Owner: pgtype.UUID{Bytes: l.Owner, Valid: true}, LeaseSeconds: int32(lease / time.Second)})
	return n > 0, err
}

// RecordBatch writes what the outcomes of a leased range make
// (delivery.NewRecord) in one transaction (even when the lease was lost:
// the mails went out): the rows (one statement; only rows still pending
// change), the send's counters and deliveries left (once), the hard
// bounces' suppressions with address.bounced, the webhooks' events (one
// outbox row naming the rows), the range's lease given back, and the send
// completed when no delivery is left. It answers whether this batch
// completed the send.
func (d *DB) RecordBatch(ctx context.Context, l *Lease, userID int64, rec *delivery.Record) (delivery.Recorded, error) {
	return d.record(ctx, l.SendID, l, userID, rec)
}

// RecordStep is RecordBatch for outcomes of send sendID's leased ranges
// while the rest of their mails still go out: everything but giving a
// lease back. A worker records the mails that went in steps, so one that
// dies mid-range leaves few mails sent and not recorded (sent again).
func (d *DB) RecordStep(ctx context.Context, sendID, userID int64, rec *delivery.Record) (delivery.Recorded, error) {
	return d.record(ctx, sendID, nil, userID, rec)
}

// record writes rec of send sendID, and gives lease l back (nil: a step);
// a send still running is judged by its account's reputation guards.
func (d *DB) record(ctx context.Context, sendID int64, l *Lease, userID int64, rec *delivery.Record) (out delivery.Recorded, err error) {
	release := l != nil
	var lo, hi int64 // the ids' span (none: an empty span)
	if len(rec.IDs) > 0 {
		lo, hi = slices.Min(rec.IDs), slices.Max(rec.IDs)
	}
	bounceEmails, bounceReasons := make([]string, len(rec.Bounced)), make([]string, len(rec.Bounced))
	for i, b := range rec.Bounced {
		bounceEmails[i], bounceReasons[i] = string(b.Email), b.Reason
	}
	err = d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		out = delivery.Recorded{}
		// Planned with this record's ids: a generic plan, made once the
		// statement has run a few times, joins every row of the ids' span
		// with every outcome (a nested loop over the span).
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_custom_plan"); err != nil {
			return err
		}
		if !release {
			// A step's commit does not wait for the disk: a step lost with
			// a PostgreSQL crash leaves its mails to be sent again, as
			// before steps, and a worker's death loses nothing committed.
			if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
				return err
			}
		}
		r, err := q.RecordDeliveries(ctx, db.RecordDeliveriesParams{Statuses: rec.Statuses, Tried: rec.Tried, NextAts: rec.NextAts,
			Errors: rec.Errors, SendID: sendID, Ids: rec.IDs, Deferred: rec.Deferred, MinID: lo, MaxID: hi})
		if err != nil {
			return err
		}
		if err := d.emitOutcomes(ctx, q, userID, sendID, rec.Events, r.Finals > 0); err != nil {
			return err
		}
		if len(bounceEmails) > 0 {
			if _, err := q.AddBounces(ctx, db.AddBouncesParams{UserID: userID, SendID: sendID, Reasons: bounceReasons, Emails: bounceEmails}); err != nil {
				return err
			}
		}
		if release {
			if err := q.ReleaseRange(ctx, db.ReleaseRangeParams{SendID: sendID, K: l.K, Owner: pgtype.UUID{Bytes: l.Owner, Valid: true}}); err != nil {
				return err
			}
		}
		if c := rec.ByProvider(r.Changed); len(c.Providers) > 0 {
			if err := q.BumpProviderStats(ctx, db.BumpProviderStatsParams{SendID: sendID, UserID: userID, Providers: c.Providers,
				Delivered: c.Delivered, Deferred: c.Deferred, Bounced: c.Bounced, Blocked: c.Blocked,
				Complained: make([]int64, len(c.Providers))}); err != nil {
				return err
			}
		}
		// The shared rows last, the hour's statistics then the send's: the
		// batches of a send (and the runs of an automation, on its hour's
		// statistics) queue on their locks, so they are held for as little
		// as possible. (Taken first, the statistics row was held through
		// the rest of the transaction: 6 ms a record, waited for by every
		// other, in a 200,000-contact automation.)
		if err := bumpSend(ctx, q, sendID, mail.Counts{Delivered: r.Delivered, Bounces: r.Bounced, SoftBounces: r.Failed, Deferred: r.Deferred}); err != nil {
			return err
		}
		c, err := q.BumpSendCounters(ctx, db.BumpSendCountersParams{Delivered: r.Delivered, Bounced: r.Bounced, Finals: r.Finals, SendID: sendID})
		if err != nil {
			return err
		}
		if c.Remaining > 0 {
			out.Paused, err = d.guard(ctx, q, sendID, stateOf(db.CountSendBounceRow{Attempted: c.Attempted, Bounces: c.Bounces,
				Delivered: c.Delivered, Complaints: c.Complaints, Paused: c.Paused, Run: c.Run, PauseBounceRate: c.PauseBounceRate,
				PauseBounceAfter: c.PauseBounceAfter, PauseComplaintRate: c.PauseComplaintRate, PauseComplaintAfter: c.PauseComplaintAfter}))
			return err
		}
		out.Completed, err = completeSend(ctx, q, sendID)
		return err
	})
	return out, err
}

// CompleteSend completes send id when nothing is left open (a sweeper's
// check for a send whose last batch was lost after recording).
func (d *DB) CompleteSend(ctx context.Context, id int64) (bool, error) {
	var done bool
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		var err error
		done, err = completeSend(ctx, q, id)
		return err
	})
	return done, err
}

// LastDeliveryID is the highest delivery id of send id (0: none).
func (d *DB) LastDeliveryID(ctx context.Context, id int64) (int64, error) {
	return d.q.LastDeliveryID(ctx, id)
}

// DueSend is a ready send whose time has come.
type DueSend = delivery.DueSend

// DueSends are ready sends whose time has come, oldest due first.
func (d *DB) DueSends(ctx context.Context) ([]DueSend, error) {
	rows, err := d.q.DueSends(ctx)
	out := make([]DueSend, len(rows))
	for i, r := range rows {
		out[i] = DueSend{ID: r.ID, Version: r.Version}
	}
	return out, err
}

// StalledSend is a running send without progress for a while.
type StalledSend = delivery.StalledSend

// StalledSends are running sends that recorded nothing for idle.
func (d *DB) StalledSends(ctx context.Context, idle time.Duration) ([]StalledSend, error) {
	rows, err := d.q.StalledSends(ctx, int32(idle/time.Second))
	out := make([]StalledSend, len(rows))
	for i, r := range rows {
		out[i] = StalledSend{ID: r.ID, First: r.FirstDeliveryID, BatchSize: int(r.BatchSize)}
	}
	return out, err
}

// OpenRanges are up to n batch ranges of a send holding rows a batch could
// take now, lowest first.
func (d *DB) OpenRanges(ctx context.Context, s StalledSend, n int) ([]int64, error) {
	if s.BatchSize <= 0 {
		return nil, nil
	}
	return d.q.OpenRanges(ctx, db.OpenRangesParams{FirstID: s.First, BatchSize: int64(s.BatchSize), SendID: s.ID, N: int32(n)})
}

// TouchSend notes progress of send id (its chain was restarted).
func (d *DB) TouchSend(ctx context.Context, id int64) error {
	return d.q.TouchSend(ctx, id)
}

// DropExpiredDeliveries drops the deliveries partitions whose sends are
// all done with for longer than retention: the partition is full (a later
// send id exists past its range), and none of its sends is ready or
// running or completed within retention. Statistics stay: they are the
// sends' counters. A send scheduled later into a dropped range gets its
// partition made again. It answers the partitions dropped.
func (d *DB) DropExpiredDeliveries(ctx context.Context, retention time.Duration) ([]string, error) {
	rows, err := d.conn.Query(ctx, `
		SELECT c.relname FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid
		JOIN pg_class p ON p.oid = i.inhparent
		WHERE p.relname = 'deliveries' AND c.relname ~ '^deliveries_p[0-9]+$'
		ORDER BY c.relname`)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var dropped []string
	for _, name := range names {
		n, err := strconv.ParseInt(strings.TrimPrefix(name, "deliveries_p"), 10, 64)
		if err != nil {
			continue
		}
		lo, hi := n*PartitionSends, (n+1)*PartitionSends
		var expired bool
		err = d.conn.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM single_sends WHERE id >= $2)
			   AND NOT EXISTS (SELECT 1 FROM single_sends
			                   WHERE id >= $1 AND id < $2 AND deleted_at IS NULL
			                     AND (status IN (1, 2) OR (status = 3 AND sent_at > now() - make_interval(secs => $3))))`,
			lo, hi, retention.Seconds()).Scan(&expired)
		if err != nil {
			return dropped, err
		}
		if !expired {
			continue
		}
		// DETACH … CONCURRENTLY waits for the partition's readers without
		// blocking the other partitions' (a plain DROP would lock the
		// parent table behind any open delivery transaction).
		if _, err := d.conn.Exec(ctx, "ALTER TABLE deliveries DETACH PARTITION "+pgx.Identifier{name}.Sanitize()+" CONCURRENTLY"); err != nil {
			return dropped, err
		}
		if _, err := d.conn.Exec(ctx, "DELETE FROM delivery_ranges WHERE send_id >= $1 AND send_id < $2", lo, hi); err != nil {
			return dropped, err
		}
		if _, err := d.conn.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
			return dropped, err
		}
		dropped = append(dropped, name)
	}
	return dropped, nil
}

// customValues is a contact's custom column as text values keyed by the
// lower-cased field name (nil when there are none), numbers written as
// stored.
func customValues(raw string) (map[string]string, error) {
	custom, err := decodeCustom([]byte(raw))
	if err != nil || len(custom) == 0 {
		return nil, err
	}
	out := make(map[string]string, len(custom))
	for k, v := range custom {
		switch v := v.(type) {
		case string:
			out[strings.ToLower(k)] = v
		case json.Number:
			out[strings.ToLower(k)] = v.String()
		case nil:
		default:
			out[strings.ToLower(k)] = fmt.Sprint(v)
		}
	}
	return out, nil
}
