#!/usr/bin/env bash
# driver-suites.sh runs the plain drivers' own database/sql test suites
# (github.com/jackc/pgx/v5/stdlib's sql_test.go, go-sql-driver/mysql's
# driver_test.go, at the versions in go.mod) once with the plain driver and
# once through respool, against a throwaway PostgreSQL and MariaDB on
# loopback (integration/servers), and prints the tests whose result differs.
#
# The test files are copied from the module cache into a scratch module
# (default: a new temporary directory; DIR=... to keep it), never into the
# repository. There RESPOOL_WRAP=1 makes them open through respool:
# stdlib.OpenDB wraps stdlib.GetConnector in respool.NewConnector, and
# sql.Open("pgx"|"mysql", dsn) becomes sql.Open("respool", dsn). The edits
# are few and listed in the python below: helpers that read *stdlib.Conn use
# respool.RawConn (works on both), mysql's tests of its unexported state are
# dropped, and its unexported values the suite reads are copied.
# Needs go, python3, and the servers' binaries (scripts/ensure-mariadb.sh).
# Takes about 3 minutes on 2 busy cores.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${DIR:-$(mktemp -d /tmp/respool-driver-suites.XXXXXX)}
mod=$(go env GOMODCACHE)
pgxv=$(cd "$repo" && go list -m -f '{{.Version}}' github.com/jackc/pgx/v5)
myv=$(cd "$repo" && go list -m -f '{{.Version}}' github.com/go-sql-driver/mysql)
(cd "$repo" && go mod download github.com/jackc/pgx/v5 github.com/go-sql-driver/mysql)
mkdir -p "$dir/pgxstdlib" "$dir/mysqlt" "$dir/run"
cp "$mod/github.com/jackc/pgx/v5@$pgxv/stdlib/sql_test.go" "$dir/pgxstdlib/"
cp "$mod/github.com/go-sql-driver/mysql@$myv/driver_test.go" "$dir/mysqlt/"
chmod u+w "$dir"/*/*.go
cd "$dir"
cat > go.mod <<EOM
module driversuites

go 1.25.0

replace github.com/respool/respool => $repo

replace github.com/respool/respool/integration => $repo/integration
EOM
echo 'package stdlib' > pgxstdlib/doc.go
echo 'package mysqlt' > mysqlt/doc.go
cat > edit_pgx.py <<'EOP'
import sys
p = sys.argv[1]
s = open(p).read()
for old, new in [
    ('stdlib.OpenDB(', 'openDBWrap('),
    ('sql.Open("pgx", ', 'sql.Open(driverNameWrap("pgx"), '),
    ('sql.Open(tt.driverName, ', 'sql.Open(driverNameWrap(tt.driverName), '),
    ('stdlib.OpenDBFromPool(pool)', 'sql.OpenDB(connectorWrap(stdlib.GetPoolConnector(pool)))'),
    ('driverConn.(*stdlib.Conn).Conn()', 'rawPgx(driverConn)'),
    ('\tdb, err := sql.Open(driverNameWrap("pgx"), connStr)',
     '\tif wrap { // respool reads a DSN without \'/\' or \'=\' as mysql\'s: name the driver\n\t\tconnStr += "?respool_driver=pgx"\n\t}\n\tdb, err := sql.Open(driverNameWrap("pgx"), connStr)'),
    ('\trequire.EqualValues(t, 1, db.Stats().OpenConnections)\n\tc, err := db.Conn',
     '\tif !wrap { // database/sql\'s Stats count respool\'s shells, not connections\n\t\trequire.EqualValues(t, 1, db.Stats().OpenConnections)\n\t}\n\tc, err := db.Conn'),
]:
    if old not in s:
        sys.exit("pgx.py: not found: " + old)
    s = s.replace(old, new)
open(p, 'w').write(s)
EOP
cat > edit_mysql.py <<'EOP'
import sys
p = sys.argv[1]
s = open(p).read()
def must(old):
    if old not in s:
        sys.exit("mysql.py: not found: " + old)
def drop_func(s, name):
    i = s.index('\nfunc ' + name + '(')
    j = s.index('\n}\n', i) + 3
    return s[:i] + '\n// ' + name + " removed: it reads the driver's unexported state.\n" + s[j:]
for n in ['TestPing', 'TestQueryMultipleResults', 'TestColumnsReusesSlice', 'TestConnectionAttributes']:
    s = drop_func(s, n)
a = s.index('// static interface implementation checks of mysqlConn')
b = s.index('func TestMultiResultSet(')
s = s[:a] + s[b:]
for old, new in [
    ('package mysql\n', 'package mysqlt_test\n'),
    ('import (\n', 'import (\n\t. "github.com/go-sql-driver/mysql"\n'),
    ('\t_ driver.Rows = &binaryRows{}\n\t_ driver.Rows = &textRows{}\n', '\t_ = 0\n'),
    ('driverNameTest = driverName', 'driverNameTest = driverNameWrap()'),
    ('oldLogger := defaultLogger', 'oldLogger := Logger(log.New(os.Stderr, "[mysql] ", log.Ldate|log.Ltime|log.Lshortfile))'),
    ('\t"slices"\n', ''), ('\t"strconv"\n', ''),
    ('\t\t\tex := conn.(driver.Execer)\n', '\t\t\tex, ok := conn.(driver.Execer)\n\t\t\tif !ok {\n\t\t\t\tt.Fatalf("%T is not a driver.Execer", conn)\n\t\t\t}\n'),
]:
    must(old)
    s = s.replace(old, new, 1)
open(p, 'w').write(s)
EOP
python3 edit_pgx.py pgxstdlib/sql_test.go
python3 edit_mysql.py mysqlt/driver_test.go
cat > pgxstdlib/respool_wrap_test.go <<'EOP'
package stdlib_test

import (
	"database/sql"
	"database/sql/driver"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/respool/respool"
)

// wrap: RESPOOL_WRAP=1 runs the suite through respool.
var wrap = os.Getenv("RESPOOL_WRAP") != ""

func openDBWrap(config pgx.ConnConfig, opts ...stdlib.OptionOpenDB) *sql.DB {
	return sql.OpenDB(connectorWrap(stdlib.GetConnector(config, opts...)))
}

func connectorWrap(c driver.Connector) driver.Connector {
	if !wrap {
		return c
	}
	rc, err := respool.NewConnector(respool.Config{Connector: c})
	if err != nil {
		panic(err)
	}
	return rc
}

func driverNameWrap(name string) string {
	if wrap {
		return "respool"
	}
	return name
}

func rawPgx(driverConn any) *pgx.Conn {
	c, err := respool.RawConn[*pgx.Conn](driverConn)
	if err != nil {
		panic(err)
	}
	return c
}
EOP
cat > mysqlt/shim_test.go <<'EOP'
package mysqlt_test

import (
	"database/sql"
	"os"
	"reflect"

	"github.com/go-sql-driver/mysql"

	_ "github.com/respool/respool"
)

// RESPOOL_WRAP=1 runs the suite through respool (sql.Open("respool", dsn)).
func driverNameWrap() string {
	if os.Getenv("RESPOOL_WRAP") != "" {
		return "respool"
	}
	return "mysql"
}

// Copies of go-sql-driver/mysql's unexported values the suite reads.
var errInvalidDSNUnsafeCollation = func() error {
	_, err := mysql.ParseDSN("/dbname?collation=gbk_chinese_ci&interpolateParams=true")
	return err
}()

const defaultBufSize = 4096

func readBool(input string) (value bool, valid bool) {
	switch input {
	case "1", "true", "TRUE", "True":
		return true, true
	case "0", "false", "FALSE", "False":
		return false, true
	}
	return
}

var (
	scanTypeFloat32    = reflect.TypeFor[float32]()
	scanTypeFloat64    = reflect.TypeFor[float64]()
	scanTypeInt8       = reflect.TypeFor[int8]()
	scanTypeInt16      = reflect.TypeFor[int16]()
	scanTypeInt32      = reflect.TypeFor[int32]()
	scanTypeInt64      = reflect.TypeFor[int64]()
	scanTypeUint8      = reflect.TypeFor[uint8]()
	scanTypeUint16     = reflect.TypeFor[uint16]()
	scanTypeUint32     = reflect.TypeFor[uint32]()
	scanTypeUint64     = reflect.TypeFor[uint64]()
	scanTypeNullUint   = reflect.TypeFor[sql.Null[uint64]]()
	scanTypeUnknown    = reflect.TypeFor[*any]()
	scanTypeNullFloat  = reflect.TypeFor[sql.NullFloat64]()
	scanTypeNullInt    = reflect.TypeFor[sql.NullInt64]()
	scanTypeNullTime   = reflect.TypeFor[sql.NullTime]()
	scanTypeString     = reflect.TypeFor[string]()
	scanTypeNullString = reflect.TypeFor[sql.NullString]()
	scanTypeBytes      = reflect.TypeFor[[]byte]()
)
EOP
cat > run/main.go <<'EOP'
// Command run starts a throwaway PostgreSQL and MariaDB (respool's
// integration/servers), sets the env vars the drivers' own test suites read,
// runs the command given as arguments, and stops the servers.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/respool/respool/integration/servers"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := servers.StartPostgres(ctx, servers.Local())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer pg.Stop(context.Background())
	maria, err := servers.StartMariaDB(ctx, servers.Local())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer maria.Stop(context.Background())
	env := append(os.Environ(),
		"PGX_TEST_DATABASE="+pg.PgxDSN(),
		"MYSQL_TEST_USER="+maria.User, "MYSQL_TEST_PASS="+maria.Password,
		"MYSQL_TEST_ADDR="+maria.Addr(), "MYSQL_TEST_DBNAME="+maria.Database,
		"MYSQL_TEST_ADMIN_DSN="+maria.AdminDSN(),
	)
	fmt.Fprintln(os.Stderr, "postgres:", pg.Addr(), "mariadb:", maria.Addr())
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, os.Stdout, os.Stderr
	err = cmd.Run()
	pg.Stop(context.Background())
	maria.Stop(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
EOP
cat > both.sh <<'EOP'
#!/bin/sh
cd "$1/pgxstdlib"
./../pgx.test -test.v -test.timeout 300s > ../pgx.plain.txt 2>&1
RESPOOL_WRAP=1 ./../pgx.test -test.v -test.timeout 300s > ../pgx.respool.txt 2>&1
cd "$1/mysqlt"
./../mysql.test -test.v -test.timeout 600s > ../mysql.plain.txt 2>&1
RESPOOL_WRAP=1 ./../mysql.test -test.v -test.timeout 600s > ../mysql.respool.txt 2>&1
exit 0
EOP
chmod +x both.sh
go mod tidy >/dev/null 2>&1
go build -o runsrv ./run
go test -c -o pgx.test ./pgxstdlib
go test -c -o mysql.test ./mysqlt
./runsrv ./both.sh "$dir"
for d in pgx mysql; do
	echo "== $d: tests whose result differs (< plain, > respool); full logs in $dir/$d.{plain,respool}.txt"
	diff <(grep -o -- '--- [A-Z]*: [^ ]*' "$d.plain.txt" | sort) <(grep -o -- '--- [A-Z]*: [^ ]*' "$d.respool.txt" | sort) || true
	echo "   failing plainly too: $(grep -o -- '^--- FAIL: [^ ]*' "$d.plain.txt" | cut -d' ' -f3 | tr '\n' ' ')"
done
