#!/usr/bin/env bash
# Reproduces the client session of docs/grpc.md: a
# redis-server and the example server on loopback ports, then the client
# mode of the same command. Run from the repository root:
#
#	bash examples/grpcserver/session.sh
set -euo pipefail

dir=$(mktemp -d)
bin=$dir/grpcserver
go build -o "$bin" ./examples/grpcserver
cp examples/grpcserver/rules.yaml examples/grpcserver/client-rules.yaml "$dir/"
cd "$dir"

# The server: rules.yaml, Redis on 6393, 127.0.0.1 trusted as a proxy
# (so this client's x-forwarded-for metadata is believed), metrics on 9093.
redis-server --port 6393 --bind 127.0.0.1 --save "" >redis.log 2>&1 &
redis=$!
sleep 0.5
"$bin" -redis 127.0.0.1:6393 -rules rules.yaml -trusted-proxies 127.0.0.1/32 -metrics 127.0.0.1:9093 >server.out 2>server.log &
server=$!
trap 'kill $server $redis 2>/dev/null; wait $server $redis 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do grep -q listening server.out && break; sleep 0.1; done

# show runs the client mode with its arguments after printing the command
# as a shell prompt would.
show() {
	shift # "client"
	local line='$ grpcserver -call 127.0.0.1:50051' a
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9._:/=-]+$ ]]; then line+=" $a"; else line+=" '$a'"; fi
	done
	echo "$line"
	"$bin" -call 127.0.0.1:50051 -redis 127.0.0.1:6393 "$@"
	echo
}

echo "# the check rule: 5 a minute per client (here the peer, 127.0.0.1)"
show client -n 6
echo "# pro tier (alice-key): two limits; ratelimit names the binding one"
show client -api-key alice-key -n 1
echo "# the server trusts 127.0.0.1 as a proxy: the client is the x-forwarded-for entry;"
echo "# extra leftmost entries are never read"
show client -xff 203.0.113.7 -n 1
show client -xff "1.2.3.4, 10.9.9.9, 203.0.113.7" -n 1
echo "# IPv6 clients are keyed by their /64"
show client -xff "[2001:db8:1:2::1]:4711" -n 1
show client -xff "2001:db8:1:2:ffff::9" -n 1
echo "# Watch, a server stream, under the service's rule: 2 streams a minute, charged when they open"
show client -method watch -n 3
echo "# Chat under a per-message leaky bucket (5/s): the opening and each message are held for their turn"
show client -method chat -n 5
echo "# client interceptors: 2 calls per 2 s per API key, across every client of this Redis, refused at once..."
show client -api-key carol-key -client-rules client-rules.yaml -fail-fast -n 3
echo "# ...or waited for within the call's deadline (the default)"
show client -api-key carol-key -client-rules client-rules.yaml -n 3
echo "# and refused at once when the wait would pass the deadline"
show client -api-key carol-key -client-rules client-rules.yaml -deadline 500ms -n 2

echo "# reload: raise check to 10 a minute, then an invalid file (the rules in force stay)"
sed -i "0,/rate: 5, period: 1m/s//rate: 10, period: 1m/" rules.yaml
sleep 0.5
show client -xff 192.0.2.1 -n 1
echo "rules: [{name: bad, method: /x.Y/Z, limits: [{rate: 0, period: 1m}]}]" >new.yaml && mv new.yaml rules.yaml
sleep 0.5
show client -xff 192.0.2.1 -n 1
echo "# the server's log"
sed -e 's/^/  /' server.log
echo
echo "\$ curl -s http://127.0.0.1:9093/metrics | grep -E '^hybridlimit_grpc_(reload|requests_total.*rule=\"(check|health|chat)\")'"
curl -s http://127.0.0.1:9093/metrics | grep -E '^hybridlimit_grpc_(reload|requests_total.*rule="(check|health|chat)")'
