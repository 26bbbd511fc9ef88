// Package doccheck holds the test that keeps go doc complete: every package
// of the module that is not a command has a doc comment starting
// "Package <name> ", and every exported name go doc shows has a doc comment
// (functions, types, methods, struct fields, interface methods, constants
// and variables, a group's comment counting for each name in it), and that
// the test command README.md gives is the one .ci/run runs. It has no API;
// run it with go test ./internal/testkit/doccheck/.
package doccheck
