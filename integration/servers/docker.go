package servers

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/mariadb"
	"github.com/testcontainers/testcontainers-go/modules/postgres"
)

// BackendEnv names the environment variable that forces a backend:
// BackendDocker or BackendLocal. Empty or unset means Docker when a Docker
// engine answers, local binaries otherwise.
const BackendEnv = "RESPOOL_INTEGRATION_BACKEND"

// Container images, matching the major versions of Debian 12's packages.
const (
	postgresImage = "postgres:15-alpine"
	mariadbImage  = "mariadb:10.11"
)

// dockerHealth is nil when a Docker engine answers testcontainers' provider
// health check. It is computed once per process.
var dockerHealth = sync.OnceValue(func() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return err
	}
	return p.Health(ctx) // also closes p
})

// useDocker reports whether to start servers in Docker. It fails when
// BackendEnv demands Docker but no engine answers, or has an unknown value.
func useDocker() (bool, error) {
	switch b := os.Getenv(BackendEnv); b {
	case BackendLocal:
		return false, nil
	case BackendDocker:
		if err := dockerHealth(); err != nil {
			return false, fmt.Errorf("integration: %s=docker but no Docker engine answers: %v", BackendEnv, err)
		}
		return true, nil
	case "":
		return dockerHealth() == nil, nil
	default:
		return false, fmt.Errorf("integration: %s=%q: want %q, %q or empty", BackendEnv, b, BackendDocker, BackendLocal)
	}
}

func startPostgresContainer(ctx context.Context, o options) (*Server, error) {
	c, err := postgres.Run(ctx, postgresImage,
		postgres.WithDatabase(DefaultDatabase),
		postgres.WithUsername(DefaultUser),
		postgres.WithPassword(DefaultPassword),
		testcontainers.WithCmdArgs(o.postgresSettings()...),
		postgres.BasicWaitStrategies(),
	)
	return containerServer(ctx, KindPostgres, c, "5432/tcp", err)
}

func startMariaDBContainer(ctx context.Context, o options) (*Server, error) {
	c, err := mariadb.Run(ctx, mariadbImage,
		mariadb.WithDatabase(DefaultDatabase),
		mariadb.WithUsername(DefaultUser),
		mariadb.WithPassword(DefaultPassword),
		testcontainers.WithCmdArgs(o.mariadbSettings()...),
	)
	return containerServer(ctx, KindMariaDB, c, "3306/tcp", err)
}

// containerServer turns the result of a module's Run into a Server,
// terminating the container on any error.
func containerServer(ctx context.Context, kind string, c testcontainers.Container, port string, runErr error) (*Server, error) {
	fail := func(err error) (*Server, error) {
		_ = testcontainers.TerminateContainer(c) // handles a nil or typed-nil c
		return nil, fmt.Errorf("servers: %s container: %w", kind, err)
	}
	if runErr != nil {
		return fail(runErr)
	}
	endpoint, err := c.PortEndpoint(ctx, port, "")
	if err != nil {
		return fail(err)
	}
	host, p, err := net.SplitHostPort(endpoint)
	if err != nil {
		return fail(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return fail(err)
	}
	return &Server{
		Kind: kind, Backend: BackendDocker,
		Host: host, Port: n,
		User: DefaultUser, Password: DefaultPassword, Database: DefaultDatabase,
		stop: func(ctx context.Context) error {
			return testcontainers.TerminateContainer(c, testcontainers.StopContext(ctx))
		},
	}, nil
}
