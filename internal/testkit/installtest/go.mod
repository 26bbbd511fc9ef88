module github.com/hybridlimit/hybridlimit/internal/testkit/installtest

go 1.26.0

require (
	github.com/hybridlimit/hybridlimit v0.0.0
	go.uber.org/goleak v1.3.0
	golang.org/x/mod v0.43.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/hybridlimit/hybridlimit => ../../..
