module github.com/hybridlimit/hybridlimit/rules

go 1.26.0

require github.com/hybridlimit/hybridlimit v0.0.0

replace github.com/hybridlimit/hybridlimit => ..

require (
	github.com/fsnotify/fsnotify v1.10.1
	github.com/goccy/go-yaml v1.19.2
	go.uber.org/goleak v1.3.0
)

require (
	github.com/buraksezer/consistent v0.10.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	github.com/sony/gobreaker/v2 v2.4.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
