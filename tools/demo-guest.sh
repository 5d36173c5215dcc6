#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs inside the guest for `make run` (tools/vm/run-guest.sh 6.1 ...):
# load the module, run the demo, unload.
set -e
modprobe agile
agile-demo 2000
rmmod agile
echo "agile.ko unloaded cleanly"
