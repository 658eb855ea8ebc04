#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The network policy (docs/design/network.md), against services this test starts on this machine
# alone (net-tool.py serve): a TCP server and a UDP echo on 127.0.0.1, an abstract unix socket, a
# pathname unix socket and a unix datagram socket outside every grant, and a pathname socket in
# the workspace. Each is first reached unconfined (the control), then:
#   full       (the default, DSH's behaviour) reaches them, as before, from both backends
#              (Landlock scopes abstract sockets even so);
#   none       reaches none of them, on both backends in both confined modes, as root and as
#              nobody, and the command's own loopback still works; the workspace's own socket is
#              reached in workspace-write; a datagram sent by sendmsg or sendmmsg with a
#              destination (a flipped one included) is held to the same rules, and SCM_RIGHTS and
#              a TCP sendmsg of the command's own still work; a refused connection is named in no
#              line, and a command that failed after one is told that network access is disabled;
#   allowlist  reaches an allowed name through the proxy (curl, with the variables the sandbox
#              sets; names map to 127.0.0.1 in the proxy's resolver through network.hosts), is
#              refused a name not allowed with the model-facing line naming it, and cannot go
#              around the proxy: a direct connection to a host address is refused and named.
# No packet leaves the machine: the only outside address tried is 192.0.2.1 (TEST-NET-1), which
# the sandbox refuses before anything is sent, and the control never tries it.
# shellcheck source=tests/e2e/libescape.sh
. "$(dirname "$0")/libescape.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
cp "$HERE/net-tool.py" "$PROBE_DIR/net-tool.py"
NET_TOOL=$PROBE_DIR/net-tool.py
NO_NET_LINE='[sandbox: network access is disabled under this policy]'

# services [DIR]: starts the services (outside: $OUT, or DIR; the workspace: $PWD/ws) and loads
# their addresses.
services() {
	setup
	[ -z "${1:-}" ] || OUT=$1
	chmod 0777 "$OUT" ws
	"$PYTHON" "$NET_TOOL" serve "$OUT" "$PWD/ws" &
	local pid=$!
	defer kill "$pid"
	local i
	for ((i = 0; i < 100; i++)); do
		[ -e "$OUT/services" ] && break
		sleep 0.05
	done
	[ -e "$OUT/services" ] || fail "the services did not start"
	# shellcheck disable=SC1091 # written just now
	. "$OUT/services"
}

# connect_at WHERE KIND ADDRESS [NETWORK]: net-tool.py connect, unconfined (WHERE control) or
# confined with --network NETWORK (default none); its answer in $out.
connect_at() {
	local where=$1 kind=$2 address=$3 network=${4:-none}
	if [ "$where" = control ]; then
		rc=0
		out=$("$PYTHON" "$NET_TOOL" connect "$kind" "$address" 2>&1) || rc=$?
		return
	fi
	run exec --backend "${where%/*}" --mode "${where#*/}" --workspace "$PWD/ws" \
		--network "$network" -- "$PYTHON" "$NET_TOOL" connect "$kind" "$address"
}

# accepted NAME: how many connections the service NAME accepted.
accepted() {
	[ -e "$OUT/accepted" ] || { echo 0; return; }
	grep -cx "$1" "$OUT/accepted" || true
}

# reach WHERE KIND ADDRESS NAME NETWORK: must connect and exchange, and the service must see it.
reach() {
	connect_at "$1" "$2" "$3" "${5:-full}"
	assert_streq "$out" OK
	[ "$(accepted "$4")" -ge 1 ] || fail "$4 saw no connection"
}

# unreachable WHERE KIND ADDRESS NAME: refused under none, and the service saw nothing.
unreachable() {
	connect_at "$1" "$2" "$3" none
	refused "connecting to $3 ($2)"
	[[ "$out" =~ ^(E[A-Z]+|TIMEOUT)$ ]] || fail "unexpected answer: $out ($err)"
	assert_streq "$(accepted "$4")" 0
}

case_tcp() {
	services
	if [ "$1" = control ]; then reach control tcp "127.0.0.1:$TCP_PORT" tcp; else unreachable "$1" tcp "127.0.0.1:$TCP_PORT" tcp; fi
}
case_udp() {
	services
	if [ "$1" = control ]; then reach control udp "127.0.0.1:$UDP_PORT" udp; else unreachable "$1" udp "127.0.0.1:$UDP_PORT" udp; fi
}
case_abstract() {
	services
	if [ "$1" = control ]; then reach control abstract "$ABSTRACT" abstract; else unreachable "$1" abstract "$ABSTRACT" abstract; fi
}
case_pathname() {
	services
	if [ "$1" = control ]; then reach control unix "$OUT_SOCK" out.sock; else unreachable "$1" unix "$OUT_SOCK" out.sock; fi
}
case_dgram() {
	services
	if [ "$1" = control ]; then
		reach control dgram "$OUT_DGRAM" out.dgram
		sleep 0.2
		[ "$(accepted out.dgram)" -ge 1 ] || fail "the datagram did not arrive"
		return
	fi
	connect_at "$1" dgram "$OUT_DGRAM" none
	refused "sending to $OUT_DGRAM"
	sleep 0.2
	assert_streq "$(accepted out.dgram)" 0
}

# sendmsg and sendmmsg carry their destination in memory: supervised as sendto is.
case_sendmsg() {
	services
	local kind=$2
	if [ "$1" = control ]; then
		reach control "$kind" "$OUT_DGRAM" out.dgram
		return
	fi
	connect_at "$1" "$kind" "$OUT_DGRAM" none
	refused "sending to $OUT_DGRAM by $kind"
	assert_streq "$out" EACCES
	sleep 0.2
	assert_streq "$(accepted out.dgram)" 0
}
case_sendmsg_msg() { case_sendmsg "$1" msg; }
case_sendmsg_mmsg() { case_sendmsg "$1" mmsg; }

# The workspace's own datagram socket, by sendmsg and by sendmmsg (three, each reported sent).
case_sendmsg_inside() {
	services
	local kind
	for kind in msg mmsg; do
		connect_at "$1" "$kind" "$IN_DGRAM" none
		if [ "${1#*/}" = workspace-write ]; then
			assert_streq "$out" OK
		else
			refused "$kind to the workspace's socket in read-only"
		fi
	done
	sleep 0.2
	if [ "${1#*/}" = workspace-write ]; then
		assert_streq "$(accepted in.dgram)" 4
	else
		assert_streq "$(accepted in.dgram)" 0
	fi
}

# What the supervisor performs still works: SCM_RIGHTS between the command's own sockets, and
# a TCP sendmsg over its own loopback.
case_sendmsg_own() {
	mkdir -p ws
	run exec --backend "${1%/*}" --mode "${1#*/}" --workspace "$PWD/ws" --network none -- \
		"$PYTHON" "$NET_TOOL" rights
	assert_rc 0
	assert_streq "$out" OK
	run exec --backend "${1%/*}" --mode "${1#*/}" --workspace "$PWD/ws" --network none -- \
		"$PYTHON" "$NET_TOOL" loopback msg
	assert_rc 0
	assert_streq "$out" OK
	# A send blocked on its peer holds no other call: the peer's own send is answered, then
	# it reads (one worker answers them all).
	run exec --backend "${1%/*}" --mode "${1#*/}" --workspace "$PWD/ws" --network none -- \
		"$PYTHON" "$NET_TOOL" yield
	assert_rc 0
	assert_streq "$out" OK
}

# One thread flips msg_name between the workspace's socket and the outside one while another
# sends: the outside gets nothing (the control: both get datagrams).
case_sendmsg_race() {
	services
	if [ "$1" = control ]; then
		out=$("$PYTHON" "$NET_TOOL" race "$IN_DGRAM" "$OUT_DGRAM" 1)
		sleep 0.2
		[ "$(accepted out.dgram)" -ge 1 ] || fail "the outside socket got nothing: $out"
		[ "$(accepted in.dgram)" -ge 1 ] || fail "the inside socket got nothing: $out"
		return
	fi
	run exec --backend "${1%/*}" --mode "${1#*/}" --workspace "$PWD/ws" --network none -- \
		"$PYTHON" "$NET_TOOL" race "$IN_DGRAM" "$OUT_DGRAM" 1
	assert_rc 0
	[[ "$out" =~ ^calls\ [0-9]+ ]] || fail "the race did not run: $out ($err)"
	sleep 0.2
	assert_streq "$(accepted out.dgram)" 0
	# Both sides were taken: in workspace-write the inside socket got some.
	[ "${1#*/}" = read-only ] || [ "$(accepted in.dgram)" -ge 1 ] || fail "nothing arrived inside: $out"
}

# A symlink in the workspace to the outside socket is the outside socket.
case_symlink() {
	services
	ln -s "$OUT_SOCK" ws/link.sock
	if [ "$1" = control ]; then reach control unix "$PWD/ws/link.sock" out.sock; else unreachable "$1" unix "$PWD/ws/link.sock" out.sock; fi
}

# The workspace's own socket: reached in workspace-write, not in read-only (no writable root).
case_inside() {
	services
	connect_at "$1" unix "$IN_SOCK" none
	if [ "${1#*/}" = workspace-write ]; then
		assert_streq "$out" OK
		[ "$(accepted in.sock)" -ge 1 ] || fail "in.sock saw no connection"
	else
		refused "connecting to the workspace's socket in read-only"
		assert_streq "$(accepted in.sock)" 0
	fi
}

# A host socket in /tmp (writable in workspace-write) moved or linked into the workspace is still
# the host's: Landlock keeps /tmp's files in place (no REFER there), bwrap shows a /tmp of its own.
# The workspace is outside /tmp here: one inside it is a mount of its own, which no rename crosses.
case_moved_in() {
	local tmp ws
	tmp=$(mktemp -d /tmp/dsb-net.XXXXXX)
	defer rm -rf "$tmp"
	services "$tmp"
	ws=$(mktemp -d /var/tmp/dsb-net-ws.XXXXXX)
	defer rm -rf "$ws"
	chmod 0777 "$ws"
	local script="mv '$OUT_SOCK' '$ws/moved.sock' || ln '$OUT_SOCK' '$ws/moved.sock' || exit 3
		exec '$PYTHON' '$NET_TOOL' connect unix '$ws/moved.sock'"
	if [ "$1" = control ]; then
		attempt control "$script"
		assert_streq "$out" OK
		[ "$(accepted out.sock)" -ge 1 ] || fail "out.sock saw no connection"
		return
	fi
	run exec --backend "${1%/*}" --mode "${1#*/}" --workspace "$ws" --network none -- \
		bash -c "$script"
	refused "connecting to a host socket moved into the workspace"
	assert_streq "$(accepted out.sock)" 0
}

# The command's own loopback works in its namespace.
case_own_loopback() {
	mkdir -p ws
	run exec --backend "${1%/*}" --mode "${1#*/}" --workspace "$PWD/ws" --network none -- \
		"$PYTHON" "$NET_TOOL" loopback
	assert_rc 0
	assert_streq "$out" OK
}

# full (the default) is DSH's behaviour: the host's network.
case_full() {
	services
	local where=$1
	reach "$where" tcp "127.0.0.1:$TCP_PORT" tcp full
	reach "$where" udp "127.0.0.1:$UDP_PORT" udp full
	reach "$where" unix "$OUT_SOCK" out.sock full
	# Landlock scopes abstract sockets whatever the network policy; bwrap shares the host's.
	connect_at "$where" abstract "$ABSTRACT" full
	if [ "${where%/*}" = bwrap ]; then assert_streq "$out" OK; else refused "abstract under Landlock"; fi
}

# What the model reads: a failure after a refused call says network access is disabled.
case_bash_note() {
	mkdir -p ws
	run bash --backend "${1%/*}" --mode "${1#*/}" --workspace "$PWD/ws" --network none \
		"$PYTHON $NET_TOOL connect tcp 192.0.2.1:80"
	assert_rc 0
	assert_contains "$out" "$NO_NET_LINE"
	assert_contains "$out" "[exit code: 1]"
	# A command that succeeded is told nothing.
	run bash --backend "${1%/*}" --mode "${1#*/}" --workspace "$PWD/ws" --network none \
		"$PYTHON $NET_TOOL connect tcp 192.0.2.1:80 || true"
	assert_rc 0
	assert_not_contains "$out" "[sandbox: network"
}

# --- allowlist --------------------------------------------------------------------------------------

allow_config() {
	cat >cfg.yaml <<-YAML
		network:
		  access: allowlist
		  allow: ["allowed.test:*", "*.good.test:*"]
		  deny: ["bad.good.test"]
		  hosts: {"allowed.test": "127.0.0.1", "sub.good.test": "127.0.0.1", "bad.good.test": "127.0.0.1", "denied.test": "127.0.0.1"}
	YAML
}

# bash_allow WHERE SCRIPT: the bash tool under the allow-list configuration.
bash_allow() {
	run --config cfg.yaml bash --backend "${1%/*}" --mode "${1#*/}" --workspace "$PWD/ws" "$2"
}

case_allow_reaches() {
	services
	allow_config
	bash_allow "$1" "curl -sS --max-time 5 http://allowed.test:$TCP_PORT/ && curl -sS --max-time 5 http://sub.good.test:$TCP_PORT/x"
	assert_rc 0
	assert_contains "$out" HELLO
	assert_not_contains "$out" "[sandbox: network"
	assert_streq "$(accepted tcp)" 2
	# CONNECT (what HTTPS takes) through the same proxy.
	bash_allow "$1" "curl -sS --max-time 5 --proxytunnel http://allowed.test:$TCP_PORT/"
	assert_contains "$out" HELLO
	assert_streq "$(accepted tcp)" 3
}

case_allow_refuses() {
	services
	allow_config
	bash_allow "$1" "curl -sS --max-time 5 http://denied.test:$TCP_PORT/; curl -sS --max-time 5 http://bad.good.test:$TCP_PORT/; curl -sS --max-time 5 --proxytunnel http://denied.test:$TCP_PORT/"
	assert_rc 0
	assert_contains "$out" "[sandbox: network access to denied.test denied (not in the allow-list)]"
	assert_contains "$out" "[sandbox: network access to bad.good.test denied (not in the allow-list)]"
	# Each host is named once, however often it was refused.
	[ "$(grep -c 'network access to denied.test' <<<"$out")" = 1 ] || fail "denied.test named twice: $out"
	assert_streq "$(accepted tcp)" 0
}

case_allow_bypass() {
	services
	allow_config
	# Around the proxy: the host's loopback is not the namespace's, an outside address is refused.
	bash_allow "$1" "$PYTHON $NET_TOOL connect tcp 127.0.0.1:$TCP_PORT; $PYTHON $NET_TOOL connect tcp 192.0.2.1:80; curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:$TCP_PORT/"
	assert_not_contains "$out" HELLO
	assert_contains "$out" "[sandbox: network access to 192.0.2.1:80 denied (not in the allow-list)]"
	assert_streq "$(accepted tcp)" 0
	# And the rest stays closed, as under none.
	bash_allow "$1" "$PYTHON $NET_TOOL connect unix $OUT_SOCK; $PYTHON $NET_TOOL connect abstract $ABSTRACT; $PYTHON $NET_TOOL connect udp 127.0.0.1:$UDP_PORT; $PYTHON $NET_TOOL connect msg $OUT_DGRAM; $PYTHON $NET_TOOL connect mmsg $OUT_DGRAM"
	assert_not_contains "$out" OK
	assert_streq "$(accepted out.sock)" 0
	assert_streq "$(accepted out.dgram)" 0
	assert_streq "$(accepted abstract)" 0
	assert_streq "$(accepted udp)" 0
}

# --- answers that point home, ports, the wildcard's cap -------------------------------------------
#
# The proxy connects from the machine it runs on: a name that resolves to that machine or its
# network would be a pivot. Each case runs the CLI in a network and mount namespace of the test's
# own (netns-shim): its loopback carries the "machine's" addresses (private, CGNAT, ULA,
# link-local, and 1.2.3.4 as a public address of this machine), its /etc/hosts names them, and a
# server listens on every one of them on 443, 22 and 2222. The controls reach each address
# unconfined; confined, only what the rules list is reached. No packet leaves the namespace.

HOME_ADDRS=(10.1.2.3 100.64.0.1 fc00::1 fe80::1 1.2.3.4 10.9.9.9)

# home_world: the hosts file, the configuration and the server of the namespace, in $PWD.
home_world() {
	mkdir -p ws
	chmod 0777 . ws
	{
		printf '127.0.0.1 localhost\n'
		printf '10.1.2.3 ten.test\n100.64.0.1 cgnat.test\nfc00::1 ula.test\n'
		printf 'fe80::1 ll.test\n::ffff:127.0.0.1 mapped.test\n0.0.0.0 zero.test\n'
		printf '1.2.3.4 own.test\n10.9.9.9 listed.test\n'
		local i
		for i in $(seq 0 64); do printf '10.9.9.9 n%d.cap.test\n' "$i"; done
	} >hosts
	cat >cfg.yaml <<-YAML
		network:
		  access: allowlist
		  allow: ["*.test", "*.cap.test:443", "ssh.test:*"]
		  deny: ["ssh.test:2222"]
		  allowPrivate: ["10.9.9.9/32"]
		  hosts: {"pinned.test": "10.1.2.3", "ssh.test": "10.1.2.3"}
	YAML
	cat >server.py <<-'PY'
		import socket, sys, threading
		def serve(sock):
		    while True:
		        c, _ = sock.accept()
		        with open("accepted", "a") as f:
		            host, port = c.getsockname()[:2]
		            f.write("%s %d\n" % (host.removeprefix("::ffff:"), port))
		        try:
		            c.recv(65536)
		            c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nHELLO\n")
		        except OSError:
		            pass
		        c.close()
		for port in (443, 22, 2222):
		    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
		    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
		    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
		    s.bind(("::", port))
		    s.listen(64)
		    threading.Thread(target=serve, args=(s,), daemon=True).start()
		open("ready", "w").close()
		threading.Event().wait()
	PY
}

# in_home SCRIPT: runs SCRIPT (bash) in the namespace, its server running; $out, $err, $rc.
in_home() {
	local args=(--hosts "$PWD/hosts") a
	for a in "${HOME_ADDRS[@]}"; do args+=(--addr "$a"); done
	rc=0
	"${DSB_NETNS_SHIM:?}" "${args[@]}" -- bash -c "
		'$PYTHON' server.py & server=\$!
		for i in \$(seq 100); do [ -e ready ] && break; sleep 0.05; done
		$1
		kill \$server" >"$PWD/.out" 2>"$PWD/.err" || rc=$?
	out=$(cat "$PWD/.out")
	err=$(cat "$PWD/.err")
}

HOME_TARGETS=("ten.test 10.1.2.3 a private address" "cgnat.test 100.64.0.1 a private address"
	"ula.test [fc00::1] a private address" "ll.test [fe80::1%25lo] a private address"
	"mapped.test 127.0.0.1 this machine" "zero.test 0.0.0.0 this machine"
	"own.test 1.2.3.4 this machine")

case_home() {
	home_world
	local fetch='' name address why
	for target in "${HOME_TARGETS[@]}"; do
		read -r name address why <<<"$target"
		if [ "$1" = control ]; then
			fetch+="curl -gsS --max-time 5 'http://$address:443/';"
		else
			fetch+="curl -sS --max-time 5 --proxytunnel 'http://$name:443/';"
		fi
	done
	if [ "$1" = control ]; then
		in_home "$fetch"
		assert_rc 0
		assert_streq "$(grep -c HELLO <<<"$out")" "${#HOME_TARGETS[@]}"
		return
	fi
	in_home "'$DSB' --config cfg.yaml bash --backend ${1%/*} --mode ${1#*/} --workspace '$PWD/ws' \"$fetch\""
	assert_rc 0
	assert_not_contains "$out" HELLO
	for target in "${HOME_TARGETS[@]}"; do
		read -r name address why <<<"$target"
		assert_contains "$out" "[sandbox: network access to $name denied (resolves to $why)]"
	done
	[ ! -e accepted ] || fail "the server was reached: $(cat accepted)"
}

# A range in allowPrivate, and an address pinned in hosts, are the operator's: reached.
case_home_listed() {
	home_world
	in_home "'$DSB' --config cfg.yaml bash --backend ${1%/*} --mode ${1#*/} --workspace '$PWD/ws' \"curl -sS --max-time 5 http://listed.test:443/ && curl -sS --max-time 5 --proxytunnel http://pinned.test:443/\""
	assert_rc 0
	assert_streq "$(grep -c HELLO <<<"$out")" 2
	assert_not_contains "$out" "[sandbox: network"
	assert_streq "$(sort accepted | tr '\n' ' ')" "10.1.2.3 443 10.9.9.9 443 "
}

# Ports: a rule without one admits 80 and 443, one with a port that port; deny takes ports.
case_home_ports() {
	home_world
	# Expanded in the sandbox, where ALL_PROXY names the proxy.
	# shellcheck disable=SC2016
	local socks='curl -sS --max-time 5 -x "socks5h://${ALL_PROXY#*://}"'
	if [ "$1" = control ]; then
		in_home "curl -sS --max-time 5 http://10.1.2.3:22/ && curl -sS --max-time 5 http://10.1.2.3:2222/"
		assert_streq "$(grep -c HELLO <<<"$out")" 2
		return
	fi
	in_home "'$DSB' --config cfg.yaml bash --backend ${1%/*} --mode ${1#*/} --workspace '$PWD/ws' '
		curl -sS --max-time 5 --proxytunnel http://pinned.test:22/
		curl -sS --max-time 5 http://pinned.test:443/
		curl -sS --max-time 5 --proxytunnel http://ssh.test:22/
		$socks http://ssh.test:2222/
		$socks http://pinned.test:2222/'"
	assert_rc 0
	assert_streq "$(grep -c HELLO <<<"$out")" 2
	assert_contains "$out" "[sandbox: network access to pinned.test:22 denied (port not in the allow-list)]"
	assert_contains "$out" "[sandbox: network access to ssh.test:2222 denied (port not in the allow-list)]"
	assert_contains "$out" "[sandbox: network access to pinned.test:2222 denied (port not in the allow-list)]"
	assert_streq "$(sort accepted | tr '\n' ' ')" "10.1.2.3 22 10.1.2.3 443 "
}

# The 65th distinct name that only a wildcard admits is refused before it is resolved.
case_home_cap() {
	home_world
	in_home "'$DSB' --config cfg.yaml bash --backend ${1%/*} --mode ${1#*/} --workspace '$PWD/ws' --timeout 120000 '
		for i in \$(seq 0 64); do curl -sS --max-time 5 --proxytunnel http://n\$i.cap.test:443/; done
		curl -sS --max-time 5 --proxytunnel http://n3.cap.test:443/'"
	assert_rc 0
	assert_streq "$(grep -c HELLO <<<"$out")" 65
	assert_contains "$out" "[sandbox: network access to n64.cap.test denied (more than 64 names under a wildcard)]"
	[ "$(grep -c 'sandbox: network access' <<<"$out")" = 1 ] || fail "more than one refusal: $out"
}

# --- through the server: the proxy and the refusals live in its monitor ----------------------------

case_serve() {
	services
	allow_config
	local client="$HERE/mcp-client.py"
	out=$(DSH_SANDBOX="$DSB" "$PYTHON" "$client" call ws cfg.yaml bash \
		"{\"description\": \"fetch\", \"command\": \"curl -sS --max-time 5 http://allowed.test:$TCP_PORT/; curl -sS --max-time 5 http://denied.test:$TCP_PORT/; $PYTHON $NET_TOOL connect tcp 127.0.0.1:$TCP_PORT\"}")
	assert_contains "$out" HELLO
	assert_contains "$out" "[sandbox: network access to denied.test denied (not in the allow-list)]"
	assert_streq "$(accepted tcp)" 1
}

# --- Landlock where no namespace can be made (seccomp-shim --no-namespaces) ------------------------

# shimmed ARGS...: dsh-sandbox under the shim, with a store of its own (the verdict cached by the
# other tests says a namespace can be made).
shimmed() {
	rc=0
	# Without a mount namespace nothing policy-bearing may lie in a writable root (/tmp).
	DSH_SANDBOX_STORE="$OUT/store" XDG_CONFIG_HOME="$OUT/xdg" \
		"${DSB_SECCOMP_SHIM:?}" --no-namespaces -- "$DSB" "$@" \
		>"$PWD/.out" 2>"$PWD/.err" || rc=$?
	out=$(cat "$PWD/.out")
	err=$(cat "$PWD/.err")
}

case_fallback_none() {
	services
	local m=$1 kind address name
	shimmed probe --fresh --json --network none
	assert_contains "$out" '"network":{"none":"filter","allowlist":"unavailable"}'
	for target in "tcp 127.0.0.1:$TCP_PORT tcp" "udp 127.0.0.1:$UDP_PORT udp" \
		"abstract $ABSTRACT abstract" "unix $OUT_SOCK out.sock"; do
		read -r kind address name <<<"$target"
		shimmed exec --backend landlock --mode "$m" --workspace "$PWD/ws" --network none -- \
			"$PYTHON" "$NET_TOOL" connect "$kind" "$address"
		refused "connecting to $address ($kind) without a namespace"
		[[ "$out" =~ ^E[A-Z]+$ ]] || fail "unexpected answer: $out ($err)"
		assert_streq "$(accepted "$name")" 0
	done
	# The workspace's own socket, in workspace-write.
	shimmed exec --backend landlock --mode "$m" --workspace "$PWD/ws" --network none -- \
		"$PYTHON" "$NET_TOOL" connect unix "$IN_SOCK"
	if [ "$m" = workspace-write ]; then assert_streq "$out" OK; else refused "the workspace's socket in read-only"; fi
}

case_fallback_allowlist() {
	setup
	allow_config
	mv cfg.yaml "$OUT/cfg.yaml"
	shimmed --config "$OUT/cfg.yaml" exec --backend landlock --mode "$1" --workspace "$PWD/ws" -- \
		touch ws/ran
	assert_rc 125
	assert_contains "$err" "no network namespace can be made here for the allow-list's proxy"
	[ ! -e ws/ran ] || fail "the command ran"
}

# --- policy and probe ----------------------------------------------------------------------------

case_policy() {
	mkdir -p ws
	allow_config
	run --config cfg.yaml policy --workspace "$PWD/ws" --mode workspace-write --json
	assert_rc 0
	assert_contains "$out" '"network":{"access":"allowlist","allow":["allowed.test:*","*.good.test:*"],"deny":["bad.good.test"],"allowPrivate":[],"proxyPort":3128,"enforcement":"namespace"}'
	run policy --workspace "$PWD/ws" --mode workspace-write --json
	assert_contains "$out" '"network":{"access":"full","allow":[],"deny":[],"allowPrivate":[],"proxyPort":null,"enforcement":"unrestricted"}'
	# The text says which ports each rule covers, and the listed ranges.
	printf 'network:\n  access: allowlist\n  allow: [plain.test, "ssh.test:22"]\n  deny: [bad.good.test]\n  allowPrivate: [10.20.0.0/16]\n' >ports.yaml
	run --config ports.yaml policy --workspace "$PWD/ws" --mode workspace-write
	assert_rc 0
	assert_contains "$out" "  allow plain.test (ports 80, 443)"
	assert_contains "$out" "  allow ssh.test:22"
	assert_contains "$out" "  deny bad.good.test (every port)"
	assert_contains "$out" "  allow private 10.20.0.0/16"
	run --config cfg.yaml probe --json
	assert_contains "$out" '"network":{"none":"namespace","allowlist":"namespace"}'
	assert_contains "$out" '"network":{"access":"allowlist","enforcement":"namespace"}'
}

t "identity" identity_test
cases=(
	"TCP to 127.0.0.1 connects|TCP to the host's 127.0.0.1 is refused|case_tcp"
	"UDP to 127.0.0.1 echoes|UDP to the host's 127.0.0.1 gets nothing|case_udp"
	"an abstract unix socket connects|an abstract unix socket of the host is refused|case_abstract"
	"a pathname unix socket outside connects|a pathname unix socket outside is refused|case_pathname"
	"a unix datagram outside arrives|a unix datagram to a socket outside is refused|case_dgram"
	"a symlink to the outside socket connects|a symlink in the workspace to the outside socket is refused|case_symlink"
	"a unix datagram by sendmsg with msg_name arrives|sendmsg with msg_name to a socket outside is refused|case_sendmsg_msg"
	"unix datagrams by sendmmsg arrive|sendmmsg to a socket outside is refused|case_sendmsg_mmsg"
	"sendmsg racing a flipped msg_name reaches both sockets|sendmsg racing a flipped msg_name reaches nothing outside|case_sendmsg_race"
)
for c in "${cases[@]}"; do
	IFS='|' read -r control_name name fn <<<"$c"
	t "control: $control_name" "$fn" control
	each_confined "none: $name, and the service saw nothing" "$fn"
done
each_confined "none: the workspace's own socket is reached in workspace-write alone" case_inside
each_confined "none: sendmsg and sendmmsg reach the workspace's datagram socket in workspace-write alone" case_sendmsg_inside
each_confined "none: SCM_RIGHTS and a TCP sendmsg of the command's own still work" case_sendmsg_own
t "control: a host socket in /tmp moved into the workspace connects" case_moved_in control
each_confined "none: a host socket in /tmp moved into the workspace is refused" case_moved_in
each_confined "none: the command's own loopback works" case_own_loopback
each_confined "full: the host's services are reached, as in DSH" case_full
each_confined "none: a failure after a refused connection is told so" case_bash_note
each_confined "allowlist: curl reaches allowed names through the proxy" case_allow_reaches
each_confined "allowlist: refused names are named once each" case_allow_refuses
each_confined "allowlist: no way around the proxy" case_allow_bypass
t "control: the namespace's private, link-local and own addresses are reached" case_home control
each_confined "allowlist: a name resolving to this machine or a private range is refused, named with why" case_home
each_confined "allowlist: listed ranges and pinned names are reached" case_home_listed
t "control: the namespace's ports 22 and 2222 are reached" case_home_ports control
each_confined "allowlist: ports are part of a rule, deny takes them, SOCKS5 alike" case_home_ports
each_confined "allowlist: the 65th name under a wildcard is refused" case_home_cap
t "serve: the allow-list through the server's monitor" case_serve
for m in "${MODES[@]}"; do
	t "landlock/$m without namespaces: none holds by the filter" case_fallback_none "$m"
	t "landlock/$m without namespaces: allowlist fails closed" case_fallback_allowlist "$m"
done
t "policy and probe say what is enforced" case_policy
done_testing
