// Undoc is a package whose doc comment does not start "Package undoc ", with
// one undocumented name of each kind the check looks at.
package undoc

// Documented is documented, and so are its members but those named below.
type Documented struct {
	// A is documented.
	A int
	B int // B is documented at the end of its line.
	// C and D are documented by the comment above their run.
	C int
	D int

	E int // after a blank line: a run of its own, documented here
	F int // F too.
	G int
	H int

	unexported int
}

// Method is documented.
func (Documented) Method() {}

func (Documented) Bare() {}

type Bare int

func Func() {}

// New is documented; it returns a Bare.
func New() Bare { return 0 }

func NewBare() Bare { return 0 }

// Grouped constants: the group's comment documents them all.
const (
	One = 1
	Two = 2
)

const (
	// Three is documented.
	Three = 3
	Four  = 4 // Four is documented.
	Five  = 5
)

var Var = 1

// Iface is documented.
type Iface interface {
	// M is documented.
	M()
	N()
}

func unexported() {}
