package mail

// Event kinds an account hears about. Each event is a row of the events
// table written in the transaction of the change that caused it; a worker
// mails it to the account's notification recipients. Kinds of the features
// still to come (hard bounces, senders, single sends, automations) join
// this list with them: see docs/events.md.
const (
	EventContactsImported    = "contacts.imported"    // subject: contact_type; payload: rows, added, updated, skipped
	EventAddressUnsubscribed = "address.unsubscribed" // subject: unsubscribe; payload: email_address, unsubscribe_groups_id
)
