// Package doccheck holds the tests that keep the repository honest: every
// package that is not a command has a doc comment starting
// "Package <name> ", and every exported name go doc shows has a doc comment
// (functions, types, methods, struct fields, interface methods, constants
// and variables, a group's comment counting for each name in it); the test
// command README.md gives is the one .ci/run runs; the library's go.mod
// requires only what the library and its tests need; and go.work uses
// every module of the repository. It has no API; run it with
// go test ./internal/testkit/doccheck/.
package doccheck
