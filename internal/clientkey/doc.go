// Package clientkey turns what a request carries into the key a rule
// charges: an API key (hashed), a user, or the client's address found
// behind trusted proxies. It is shared by httplimit and grpclimit, so that
// an HTTP request and a gRPC call from one client, under rules of one name,
// are keyed alike.
//
// The client address is the peer's unless the peer is a trusted proxy;
// then the forwarding header (X-Forwarded-For, or RFC 7239 Forwarded) is
// walked right to left past the trusted hops, and the first untrusted
// address is the client (Resolver.ClientIP). Addresses are unmapped, lose
// their zone and port, and are keyed by prefix (Keys.IPKey): IPv6 by its
// /64 by default.
package clientkey
