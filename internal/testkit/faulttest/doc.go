// Package faulttest holds hybrid's fault suite on the wire: 3 real
// redis-server nodes, each behind toxiproxy run in process (internal/testkit/toxitest),
// under concurrent callers, through hybrid's exported API only.
//
// It is a module of its own so that toxiproxy and what it requires
// (prometheus, zerolog, gorilla/mux) stay out of the library module's
// go.mod, and so out of the module graph of every service that imports
// hybrid. It has no non-test code but this comment.
package faulttest
