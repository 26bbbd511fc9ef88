// Package installtest installs the modules of this repository as a user
// would: it cuts a pretend release of the working tree with
// scripts/release in a temporary repository, serves the tagged modules
// from a module proxy on disk, and in a fresh module outside the
// workspace runs go get of hybrid, httplimit, grpclimit and promlimit,
// builds a small program with each and runs it against a real
// redis-server; and it installs bench with go install. It is a module of
// its own so that golang.org/x/mod, which writes the module zips, stays
// out of the library's go.mod. It has no non-test code but this comment.
package installtest
