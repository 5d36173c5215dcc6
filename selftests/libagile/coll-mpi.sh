#!/bin/bash
# SPDX-License-Identifier: MIT
#
# coll-mpi.sh BINARY NP... - run an MPI test (coll-mpi.c, the machines
# scope; segmap-mpi-scope.c; named by BINARY's file name) under
# mpirun once per process count, print its TAP, and end with "N passed, N
# failed, N skipped" (one count per run), as run.sh does for the others; a
# run that exits 77 is skipped.  With
# TAP_OUT=FILE, also one TAP line per run into FILE.
#
# Open MPI (Debian 12: 4.1) is told to use TCP (btl tcp,self; pml ob1), the
# way separate machines talk, also between ranks on one machine: over the
# loopback device, where its launcher's own traffic stays too.
# Oversubscription is allowed (more ranks than CPUs: unbound), and root
# needs --allow-run-as-root.  Each run has a time limit
# ($COLL_MPI_TIMEOUT, else $AGILE_TEST_TIMEOUT, else 600 s), so a hang
# fails the run instead of the suite.
#
# Then, for each count in $COLL_MPI_NETNS (default "4"; empty: none), a run
# on two real "machines": two network namespaces joined by a veth pair,
# each with its own hostname (a UTS namespace), mpirun in the first and
# its daemon started in the second through a one-line rsh agent, so
# MPI_COMM_TYPE_SHARED finds two nodes and every byte between them goes
# through TCP.  That needs root, ip(8) and unshare(1); without them the run
# is a SKIP.
set -u
bin=$1
test=$(basename "$bin")
shift
limit=${COLL_MPI_TIMEOUT:-${AGILE_TEST_TIMEOUT:-600}}
netns_np=${COLL_MPI_NETNS-4}
# Windows (segmap's MPI scope) between machines: Open MPI 4.1's first
# choice, osc rdma, cannot make one over the tcp btl (MPI_ERR_WIN); without
# it osc pt2pt does, and osc sm still serves ranks that share a machine.
# shellcheck disable=SC2054 # "tcp,self" is one argument
mpirun_args=(--oversubscribe --bind-to none --mca btl tcp,self --mca pml ob1
	--mca osc ^rdma)
[ "$(id -u)" -eq 0 ] && mpirun_args+=(--allow-run-as-root)
passed=0
failed=0
skipped=0
n=0
tap_lines=()

# verdict <name> <exit status> <output>
verdict() {
	n=$((n + 1))
	if [ "$2" -eq 0 ] && ! printf '%s\n' "$3" | grep -q '^not ok' &&
		printf '%s\n' "$3" | grep -q '^1\.\.[1-9]'; then
		passed=$((passed + 1))
		tap_lines+=("ok $n - libagile/$test $1")
	elif [ "$2" -eq 77 ] && ! printf '%s\n' "$3" | grep -q '^not ok'; then
		skipped=$((skipped + 1))
		tap_lines+=("ok $n - libagile/$test $1 # SKIP")
	else
		failed=$((failed + 1))
		echo "# $test $1 FAILED (exit status $2)"
		tap_lines+=("not ok $n - libagile/$test $1")
	fi
}

for np in "$@"; do
	echo "# ---- $test, $np processes"
	out=$(timeout -k 10 "$limit" mpirun "${mpirun_args[@]}" \
		--mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
		-np "$np" "$bin" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	verdict "-np $np" $rc "$out"
done

# Two network namespaces, $ns-0 and $ns-1, as two machines.
ns=agile-mpi-$$
tmp=
netns_down() {
	ip netns del "$ns-0" 2>/dev/null
	ip netns del "$ns-1" 2>/dev/null
	[ -n "$tmp" ] && rm -rf "$tmp"
}
trap netns_down EXIT

for np in $netns_np; do
	name="-np $np on two network namespaces"
	echo "# ---- $test, $np processes on two network namespaces"
	if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null ||
		! command -v unshare >/dev/null; then
		n=$((n + 1))
		skipped=$((skipped + 1))
		tap_lines+=("ok $n - libagile/$test $name # SKIP needs root, ip and unshare")
		continue
	fi
	# Interface names are short (15 bytes): veth ends named by the PID.
	a=agv$$a b=agv$$b
	tmp=$(mktemp -d)
	cat >"$tmp/agent" <<-'EOF'
		#!/bin/sh
		# Open MPI's rsh agent: "agent HOST COMMAND...", HOST a namespace.
		host=$1
		shift
		exec ip netns exec "$host" unshare --uts /bin/sh -c "hostname $host && $*"
	EOF
	chmod +x "$tmp/agent"
	printf '%s slots=%d\n' "$ns-0" $(((np + 1) / 2)) "$ns-1" $((np / 2)) \
		>"$tmp/hosts"
	if ! { ip netns add "$ns-0" && ip netns add "$ns-1" &&
		ip link add "$a" type veth peer name "$b" &&
		ip link set "$a" netns "$ns-0" && ip link set "$b" netns "$ns-1" &&
		ip -n "$ns-0" addr add 10.251.0.1/24 dev "$a" &&
		ip -n "$ns-1" addr add 10.251.0.2/24 dev "$b" &&
		ip -n "$ns-0" link set "$a" up && ip -n "$ns-1" link set "$b" up &&
		ip -n "$ns-0" link set lo up && ip -n "$ns-1" link set lo up; } 2>&1; then
		netns_down
		n=$((n + 1))
		skipped=$((skipped + 1))
		tap_lines+=("ok $n - libagile/$test $name # SKIP no network namespaces here")
		continue
	fi
	# shellcheck disable=SC2016 # $0 and $@ are the inner shell's
	out=$(COLL_MPI_NODES=2 timeout -k 10 "$limit" \
		ip netns exec "$ns-0" unshare --uts /bin/sh -c \
		'hostname "$0" && exec "$@"' "$ns-0" \
		mpirun "${mpirun_args[@]}" -x COLL_MPI_NODES \
		--hostfile "$tmp/hosts" --mca plm_rsh_agent "$tmp/agent" \
		--mca btl_tcp_if_include 10.251.0.0/24 \
		--mca oob_tcp_if_include 10.251.0.0/24 \
		-np "$np" "$bin" 2>&1)
	rc=$?
	netns_down
	printf '%s\n' "$out"
	verdict "$name" $rc "$out"
done

if [ -n "${TAP_OUT:-}" ]; then
	{ printf '%s\n' "${tap_lines[@]}"; echo "1..$n"; } >"$TAP_OUT"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
