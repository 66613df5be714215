package mail

import "time"

// Counts are the statistics of a single send or an automation, in all or
// for one hour (docs/statistics.md says what each counts).
type Counts struct {
	Triggered    int64 `json:"triggered"`
	Delivered    int64 `json:"delivered"`
	Deferred     int64 `json:"deferred"`
	Bounces      int64 `json:"bounces"`
	SoftBounces  int64 `json:"soft_bounces"`
	UniqueOpens  int64 `json:"unique_opens"`
	TotalOpens   int64 `json:"total_opens"`
	UniqueClicks int64 `json:"unique_clicks"`
	TotalClicks  int64 `json:"total_clicks"`
	Unsubscribes int64 `json:"unsubscribes"`
	Complaints   int64 `json:"complaints"`
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Triggered += o.Triggered
	c.Delivered += o.Delivered
	c.Deferred += o.Deferred
	c.Bounces += o.Bounces
	c.SoftBounces += o.SoftBounces
	c.UniqueOpens += o.UniqueOpens
	c.TotalOpens += o.TotalOpens
	c.UniqueClicks += o.UniqueClicks
	c.TotalClicks += o.TotalClicks
	c.Unsubscribes += o.Unsubscribes
	c.Complaints += o.Complaints
}

// LinkClicks are the clicks of one link.
type LinkClicks struct {
	URL          string `json:"url"`
	UniqueClicks int64  `json:"unique_clicks"`
	TotalClicks  int64  `json:"total_clicks"`
}

// HourCounts are the counts of one hour (its start, UTC).
type HourCounts struct {
	Hour time.Time `json:"hour"`
	Counts
}

// Stats are a send's or an automation's statistics: the totals, the
// clicks by link and the hours.
type Stats struct {
	Counts
	Links    []LinkClicks `json:"links"`
	Timeline []HourCounts `json:"timeline"`
}

// Open is a tracked open: the pixel of delivery DeliveryID of send SendID,
// fetched with the list token ListToken.
type Open struct {
	SendID, DeliveryID int64
	ListToken          string
}

// Click is a tracked click: link Link of the mail of delivery DeliveryID
// of send SendID.
type Click struct {
	SendID, DeliveryID int64
	Link               int
}
