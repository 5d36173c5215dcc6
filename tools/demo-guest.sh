#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs inside the guest for `make run` (tools/vm/run-guest.sh 6.1 ...):
# load the module; the raw doorbell protocol (agile-demo); work stealing
# with leaves offloaded to CPU EUs through the module (offload-vector);
# a segment-mapped forall, C = A + B^T on 4 nodes: threads of one process,
# then 4 processes whose home memory is the module's group segments
# (segmap-forall, segmap-forall procs 4);
# an allreduce among processes in a module group (allreduce);
# one short benchmark pass; unload.  The guest is software-emulated: its
# times say nothing about real hardware, only the ratios within a row do.
set -e
modprobe agile
echo "== agile-demo: one thread posts tasks to another through slot 0"
agile-demo 2000
echo
echo "== offload-vector: work stealing, leaves offloaded to CPU EUs"
offload-vector 262144 8192
echo
echo "== segmap-forall: C = A + B^T over 9 segments on 4 nodes, owner-copy"
segmap-forall 96
echo
echo "== segmap-forall procs: the same forall, 4 processes as nodes, homes in /dev/agile"
AGILE_BACKEND=kmod segmap-forall procs 4 96
echo
echo "== allreduce: 3 processes in a /dev/agile group sum a vector"
AGILE_BACKEND=kmod allreduce 3 262144
echo
echo "== agile-bench: one short pass (ratios to the baselines)"
agile-bench-static -T 1000 -r 1 doorbell sleep
rmmod agile
echo "agile.ko unloaded cleanly"
