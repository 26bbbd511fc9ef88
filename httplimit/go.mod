module github.com/hybridlimit/hybridlimit/httplimit

go 1.26.0

require github.com/hybridlimit/hybridlimit v0.0.0

require github.com/hybridlimit/hybridlimit/rules v0.0.0

replace github.com/hybridlimit/hybridlimit => ..

replace github.com/hybridlimit/hybridlimit/rules => ../rules

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/dunglas/httpsfv v1.1.2
	go.uber.org/goleak v1.3.0
)

require (
	github.com/buraksezer/consistent v0.10.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/goccy/go-yaml v1.19.2 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	github.com/sony/gobreaker/v2 v2.4.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
