package mail

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	// net/http maps a URL's non-ASCII host with this very profile
	// (idna.Lookup, its vendored copy) before it dials: UTS #46 folds
	// ideographic and full-width full stops, full-width, circled and
	// mathematical digits and letters into ASCII, so "①②⑦。0。0。1"
	// dials 127.0.0.1. A hand-made table would judge another host than the
	// one dialled.
	"golang.org/x/net/idna"
)

// WebhookHost is the host a webhook's POST connects to for a URL's host
// (url.URL.Hostname(), without brackets), as the dialer reads it: a
// non-ASCII host mapped as net/http maps it (IDNA lookup), lower case.
// When that is an IP address in any spelling a resolver takes, ip is
// it: IPv4 and IPv6 text (an IPv6 zone kept), and the forms of inet_aton
// (what getaddrinfo tries before DNS): 2130706433, 0x7f000001,
// 0177.0.0.1, 127.1, 0x7f.1, 0, with or without trailing dots. Else name
// is the host name without its trailing dots.
func WebhookHost(host string) (name string, ip netip.Addr) {
	h := host
	if !isASCII(h) {
		if a, err := idna.Lookup.ToASCII(h); err == nil {
			h = a
		}
	}
	h = strings.ToLower(h)
	if a, err := netip.ParseAddr(h); err == nil {
		return "", a
	}
	h = strings.TrimRight(h, ".")
	if a, ok := inetAton(h); ok {
		return "", a
	}
	return h, netip.Addr{}
}

// PrivateHost reports whether a webhook may not reach host (a URL's
// host without brackets, or a dialled address) unless private targets
// are allowed: the one judge of the save check and of the worker's
// dialer, on the host WebhookHost reads. Refused: every address
// PrivateAddr refuses, and the names privateName refuses. Other names
// are judged on the addresses they resolve to: by the API when the URL
// is saved, and by the worker's dialer when it connects.
func PrivateHost(host string) bool {
	return privateHost(WebhookHost(host))
}

func privateHost(name string, ip netip.Addr) bool {
	if ip.IsValid() {
		return PrivateAddr(ip)
	}
	return privateName(name)
}

// privateName reports whether a host name (as WebhookHost reads it) is
// one only a resolver inside the network answers: a single label (no dot:
// resolved through /etc/hosts or the search domains, as vm, metadata or
// instance-data are; no public name is dotless), a name under a suffix
// kept for private networks (privateSuffixes), or a cloud metadata
// service's name (metadataNames).
func privateName(name string) bool {
	if !strings.Contains(name, ".") || slices.Contains(metadataNames, name) {
		return true
	}
	for _, s := range privateSuffixes {
		if name == s || strings.HasSuffix(name, "."+s) {
			return true
		}
	}
	return false
}

var (
	// privateSuffixes are the names no public DNS delegates: a name under
	// one resolves, if at all, through a resolver of the network itself.
	privateSuffixes = []string{
		"localhost", // loopback (RFC 6761)
		"local",     // multicast DNS on the link (RFC 6762); Kubernetes' cluster.local
		"internal",  // ICANN's private-use top-level domain: metadata.google.internal, ec2.internal
		"home.arpa", // home networks (RFC 8375)
		// RFC 6762 appendix G: top-level names in use on private
		// networks, none delegated in the root zone.
		"intranet", "private", "corp", "home", "lan",
		// Not delegated either, and localhost.localdomain is loopback in
		// many distributions' /etc/hosts.
		"localdomain",
	}
	// metadataNames are cloud metadata services' names under public
	// top-level domains (those under .internal are refused with it).
	metadataNames = []string{"metadata.goog"}
)

// validIDN reports whether a name WebhookHost read is a valid host name
// as an IDN: non-ASCII left only when the IDNA lookup could not map it
// (a zero-width joiner inside loca\u200dlhost, say), and every A-label
// (xn--) one the same lookup takes. Plain ASCII labels are not checked
// by IDNA rules: net/http dials them as they are (my_host.example).
func validIDN(name string) bool {
	for _, label := range strings.Split(name, ".") {
		if !isASCII(label) {
			return false
		}
		if strings.HasPrefix(label, "xn--") {
			if _, err := idna.Lookup.ToUnicode(label); err != nil {
				return false
			}
		}
	}
	return true
}

// PrivateAddr reports whether a webhook may not reach a: an IPv6 address
// with a zone (it names a link), and any address not reachable across
// the internet (the IANA special-purpose registries): loopback, private
// (RFC 1918, RFC 4193), shared (100.64/10), link-local, this network
// (0/8), unspecified, multicast, broadcast and reserved (240/4),
// documentation and benchmarking ranges, IETF protocol assignments,
// deprecated IPv4-compatible (::/96) and site-local addresses. An IPv4
// address embedded in IPv6 the network translates to (IPv4-mapped,
// NAT64 64:ff9b::/96, 6to4 2002::/16) is judged as that IPv4 address.
func PrivateAddr(a netip.Addr) bool {
	if a.Zone() != "" {
		return true
	}
	a = a.Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			a = netip.AddrFrom4([4]byte(b[12:16]))
		case sixToFour.Contains(a):
			a = netip.AddrFrom4([4]byte(b[2:6]))
		}
	}
	refused := refused6
	if a.Is4() {
		refused = refused4
	}
	for _, p := range refused {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")

	refused4 = prefixes(
		"0.0.0.0/8",       // this network; 0.0.0.0 dials the host itself
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // shared address space (carrier NAT)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local (cloud metadata services)
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, and the broadcast 255.255.255.255
	)
	refused6 = prefixes(
		"::/96",           // unspecified, loopback, IPv4-compatible (deprecated)
		"::ffff:0:0:0/96", // IPv4-translated
		"64:ff9b:1::/48",  // local-use NAT64
		"100::/64",        // discard-only
		"2001::/23",       // IETF protocol assignments (Teredo, benchmarking, ORCHID)
		"2001:db8::/32",   // documentation
		"3fff::/20",       // documentation
		"5f00::/16",       // segment routing
		"fc00::/7",        // unique local (private)
		"fe80::/10",       // link-local
		"fec0::/10",       // site-local (deprecated)
		"ff00::/8",        // multicast
	)
)

func prefixes(ps ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ps))
	for i, p := range ps {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

// inetAton reads s as glibc's inet_aton does: one to four parts joined by
// dots, each decimal, octal (a leading 0) or hexadecimal (0x), every part
// but the last one byte, the last one filling the bytes left (127.1 is
// 127.0.0.1, 2130706433 is 127.0.0.1 too).
func inetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		base := 10
		switch {
		case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
			base, p = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		if p == "" { // "0x", or an empty part
			return netip.Addr{}, false
		}
		n, err := strconv.ParseUint(p, base, 32) // no sign, no underscore with a base given

		if err != nil {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if n > 0xff {
				return netip.Addr{}, false
			}
			v = v<<8 | n
			continue
		}
		left := 8 * uint(4-i) // bits the last part fills
		if left < 32 && n >= 1<<left {
			return netip.Addr{}, false
		}
		v = v<<left | n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}
