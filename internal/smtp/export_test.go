package smtp

import "time"

// SetNow sets the clock rs judges back-offs by.
func SetNow(rs *Relays, now func() time.Time) { rs.now = now }
