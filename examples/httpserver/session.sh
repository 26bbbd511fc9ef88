#!/usr/bin/env bash
# Reproduces the curl session of docs/http.md: a redis-server and two
# instances of the example server on loopback ports, sharing that Redis.
# Run from the repository root:
#
#	bash examples/httpserver/session.sh
set -euo pipefail

dir=$(mktemp -d)
bin=$dir/httpserver
go build -o "$bin" ./examples/httpserver
cp examples/httpserver/rules.yaml "$dir/"
cd "$dir"

# Redis on 6391. Instance a on :8080 trusts 127.0.0.1 as a proxy (so curl
# on loopback plays a trusted proxy and its X-Forwarded-For is believed);
# instance b on :8081 trusts no proxy and sends both header styles.
redis-server --port 6391 --bind 127.0.0.1 --save "" >redis.log 2>&1 &
redis=$!
sleep 0.5
"$bin" -redis 127.0.0.1:6391 -rules rules.yaml -trusted-proxies 127.0.0.1/32 >a.out 2>a.log &
a=$!
"$bin" -listen 127.0.0.1:8081 -headers both -redis 127.0.0.1:6391 -rules rules.yaml >b.out 2>b.log &
b=$!
trap 'kill $a $b $redis 2>/dev/null; wait $a $b $redis 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do grep -q listening a.out && grep -q listening b.out && break; sleep 0.1; done

# show prints a curl command as a shell prompt would, then runs it; with
# -short, only the status line, the rate-limit fields and the body.
show() {
	local short=0
	if [ "$1" = -short ]; then short=1; shift; fi
	local line='$ curl -si' arg
	for arg in "$@"; do
		if [[ $arg =~ ^[A-Za-z0-9._:/=-]+$ ]]; then line+=" $arg"; else line+=" '$arg'"; fi
	done
	echo "$line"
	if [ $short = 1 ]; then
		curl -si "$@" | tr -d '\r' | grep -E -i '^(HTTP/|ratelimit|retry-after|x-ratelimit|$)|^[^A-Za-z]|^results' || true
	else
		curl -si "$@" | tr -d '\r'
		echo
	fi
	echo
}

echo "# the search rule: 5 a minute per client (here the peer, 127.0.0.1); five 200s, then a 429"
for _ in 1 2 3 4 5 6; do show 'http://127.0.0.1:8080/api/search?q=go'; done

echo "# pro tier (alice): two limits; RateLimit names the binding one"
show -short -H 'Authorization: Bearer alice-token' 'http://127.0.0.1:8080/api/search?q=go'
echo "# :8080 trusts 127.0.0.1 as a proxy: the client is the X-Forwarded-For entry"
show -short -H 'X-Forwarded-For: 203.0.113.7' 'http://127.0.0.1:8080/api/search?q=go'
echo "# extra leftmost entries are never read: the same client 203.0.113.7"
show -short -H 'X-Forwarded-For: 1.2.3.4, 10.9.9.9, 203.0.113.7' 'http://127.0.0.1:8080/api/search?q=go'
echo "# IPv4-mapped IPv6 is the same client"
show -short -H 'X-Forwarded-For: ::ffff:203.0.113.7' 'http://127.0.0.1:8080/api/search?q=go'
echo "# an obfuscated entry stops the walk at the proxy, 127.0.0.1, whose budget is spent"
show -short -H 'X-Forwarded-For: 0x7f.0.0.1' 'http://127.0.0.1:8080/api/search?q=go'
echo "# IPv6 clients are keyed by their /64"
show -short -H 'X-Forwarded-For: [2001:db8:1:2::1]:4711' 'http://127.0.0.1:8080/api/search?q=go'
show -short -H 'X-Forwarded-For: 2001:db8:1:2:ffff::9' 'http://127.0.0.1:8080/api/search?q=go'
echo "# :8081 trusts no proxy: the spoofed header is ignored and the peer 127.0.0.1 is keyed;"
echo "# its budget, shared with :8080 through Redis, is spent"
show -short -H 'X-Forwarded-For: 198.51.100.99' 'http://127.0.0.1:8081/api/search?q=go'

echo "# reload: raise search to 10 a minute; an invalid file; no file; the good file back"
echo '$ sed -i "0,/rate: 5, period: 1m/s//rate: 10, period: 1m/" rules.yaml'
sed -i "0,/rate: 5, period: 1m/s//rate: 10, period: 1m/" rules.yaml
sleep 0.5
show -short -H 'X-Forwarded-For: 192.0.2.1' http://127.0.0.1:8080/api/search
cp rules.yaml rules.good
echo '$ echo "rules: [{name: bad, route: /x, limits: [{rate: 0, period: 1m}]}]" > new.yaml && mv new.yaml rules.yaml'
echo "rules: [{name: bad, route: /x, limits: [{rate: 0, period: 1m}]}]" >new.yaml && mv new.yaml rules.yaml
sleep 0.5
echo "# the rules in force stay"
show -short -H 'X-Forwarded-For: 192.0.2.1' http://127.0.0.1:8080/api/search
echo '$ rm rules.yaml'
rm rules.yaml
sleep 0.5
show -short -H 'X-Forwarded-For: 192.0.2.1' http://127.0.0.1:8080/api/search
echo '$ cp rules.good rules.yaml'
cp rules.good rules.yaml
sleep 0.5
echo "# the log of :8080 (stderr)"
sed -e 's/^/  /' a.log
echo

echo "# a shaped upload: leaky bucket, 2/s, burst 3, max_delay 1s; five at once"
echo '$ for i in 1 2 3 4 5; do curl -s -o /dev/null -w "%{http_code} %{time_total}s\n" -X POST -H "Authorization: Bearer bob-token" http://127.0.0.1:8080/api/upload & done; wait'
uploads=()
for _ in 1 2 3 4 5; do
	curl -s -o /dev/null -w "%{http_code} %{time_total}s\n" -X POST -H "Authorization: Bearer bob-token" http://127.0.0.1:8080/api/upload &
	uploads+=($!)
done
wait "${uploads[@]}" # not the servers
echo

echo "\$ curl -s http://127.0.0.1:8080/metrics | grep -E '^hybridlimit_(http_reload|http_requests_total.*rule=\"(search|upload)\"|decisions_total.*source=\"(remote|deny-cache)\"|node_(calls|degraded|breaker_state))'"
curl -s http://127.0.0.1:8080/metrics | grep -E '^hybridlimit_(http_reload|http_requests_total.*rule="(search|upload)"|decisions_total.*source="(remote|deny-cache)"|node_(calls|degraded|breaker_state))'
