package driver

import (
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// importAlias is the name the documentation and the examples import this
// package under, so that it does not shadow database/sql/driver.
const importAlias = "respool"

// exportedNames returns the exported top-level names of this package but
// those database/sql/driver exports too (Connector, Driver), whose
// "driver." could be either package.
func exportedNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	add := func(id *ast.Ident) {
		if id.IsExported() && id.Name != "Connector" && id.Name != "Driver" && !slices.Contains(names, id.Name) {
			names = append(names, id.Name)
		}
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					add(d.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						add(s.Name)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							add(n)
						}
					}
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

// The README, this package's comments and its examples name this package's
// identifiers as respool.X, the import alias the package documentation
// gives, never as driver.X, which reads as database/sql/driver.
func TestDocsUseTheImportAlias(t *testing.T) {
	names := exportedNames(t)
	if len(names) < 10 {
		t.Fatalf("found only %v exported names", names)
	}
	qualified := regexp.MustCompile(`\bdriver\.(` + strings.Join(names, "|") + `)\b`)
	check := func(where, text string) {
		t.Helper()
		for i, line := range strings.Split(text, "\n") {
			if strings.Contains(line, "%!") {
				continue // fmt's notation names the type by its package: %!x(driver.Config=...)
			}
			if m := qualified.FindString(line); m != "" {
				t.Errorf("%s:%d: %s: write %s.%s", where, i+1, m, importAlias, strings.TrimPrefix(m, "driver."))
			}
		}
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	check("README.md", string(readme))

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		// Comments everywhere, and code in the examples (package driver_test);
		// string literals are left alone (GoString prints the type's Go name).
		var s scanner.Scanner
		fset := token.NewFileSet()
		s.Init(fset.AddFile(name, -1, len(src)), src, nil, scanner.ScanComments)
		examples := strings.HasPrefix(name, "example_")
		var prev []string // the last two tokens, for driver . X
		for {
			pos, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			line := fset.Position(pos).Line
			switch {
			case tok == token.COMMENT:
				check(name+":"+strconv.Itoa(line), lit)
			case examples && tok == token.IDENT && len(prev) == 2 && prev[0] == "driver" && prev[1] == ".":
				if slices.Contains(names, lit) {
					t.Errorf("%s:%d: driver.%s: import the package as %s", name, line, lit, importAlias)
				}
			}
			if tok == token.PERIOD {
				lit = "."
			}
			prev = append(prev, lit)
			if len(prev) > 2 {
				prev = prev[1:]
			}
		}
	}
}
