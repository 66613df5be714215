package console

// HoldDecodes takes every image-check slot of h until release is called.
func HoldDecodes(h *Handler) (release func()) {
	for range cap(h.decodes) {
		h.decodes <- struct{}{}
	}
	return func() {
		for range cap(h.decodes) {
			<-h.decodes
		}
	}
}

// ApproxBytes is approxBytes, for the quota's message.
var ApproxBytes = approxBytes
