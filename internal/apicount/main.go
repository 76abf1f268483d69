// Command apicount counts the exported identifiers of respool's public
// packages, so that the size of the surface stays visible (make api): the
// top-level funcs, types, consts and vars, and the methods of exported
// types, of every package outside internal/, integration/, examples/ and
// bench/, test files left out. It prints one line a package and the total.
//
// Usage: go run ./internal/apicount [-max N] [DIR]
//
// With -max it exits 1 when the total is above N.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// skipped are the folders whose packages are not the library's surface.
var skipped = map[string]bool{"internal": true, "integration": true, "examples": true, "bench": true, "testdata": true}

func main() {
	max := flag.Int("max", 0, "exit 1 when the total is above this (0: no limit)")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	counts, err := count(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicount:", err)
		os.Exit(2)
	}
	dirs := make([]string, 0, len(counts))
	for d := range counts {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	total := 0
	for _, d := range dirs {
		fmt.Printf("%5d  %s\n", counts[d], d)
		total += counts[d]
	}
	fmt.Printf("%5d  total in %d packages\n", total, len(dirs))
	if *max > 0 && total > *max {
		fmt.Fprintf(os.Stderr, "apicount: %d exported identifiers, more than the %d allowed\n", total, *max)
		os.Exit(1)
	}
}

// count returns the exported identifiers of each public package below root,
// by the package's folder relative to root.
func count(root string) (map[string]int, error) {
	counts := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != root && (skipped[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		n, ok, err := countDir(path)
		if err != nil || !ok {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		counts[filepath.ToSlash(rel)] = n
		return nil
	})
	return counts, err
}

// countDir counts the exported identifiers of the package in dir; ok is
// false when dir holds no library package (no Go files, or a command).
func countDir(dir string) (n int, ok bool, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, false, err
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return 0, false, err
		}
		if f.Name.Name == "main" {
			continue
		}
		ok = true
		n += countFile(f)
	}
	return n, ok, nil
}

func countFile(f *ast.File) int {
	n := 0
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil || receiverExported(d.Recv.List[0].Type) {
				n++
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						n++
					}
				case *ast.ValueSpec:
					for _, id := range s.Names {
						if id.IsExported() {
							n++
						}
					}
				}
			}
		}
	}
	return n
}

// receiverExported reports whether a method's receiver type is exported
// (T, *T, T[K], *T[K, V]).
func receiverExported(t ast.Expr) bool {
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}
