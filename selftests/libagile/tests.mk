# SPDX-License-Identifier: MIT
#
# The libagile selftest programs, one concern each, named <layer>-<concern>
# (selftests/libagile/<name>.c), in the order the runners run them.
# Included by selftests/libagile/Makefile.  A program exits 0 (pass), 77 (skipped
# here: no GPU, not root, ...) or anything else (fail).
TESTS := sys-cpus env-invalid sched-deque-stress sched-fib sched-array-sum sched-pfor-uneven \
	sched-nested-spawn sched-oversubscribe sched-error-propagation \
	sched-create-destroy sched-task-tree sched-spill sched-misuse \
	sched-task-api sched-caller \
	sched-pin-fallback \
	sched-concurrent-runs sched-cross-pool sched-steal-leap-wake \
	sched-descheduled sched-spread \
	dev-doorbell dev-backend-debug dev-backend-choose eu-pool eu-race \
	kernels-registry kernels-matlist kernels-axpy kernels-reduce \
	kernels-failures kernels-on-eus kernels-launch \
	retarget-matlist retarget-reduce retarget-transpose retarget-refused \
	retarget-grid3d retarget-hipnames retarget-histogram retarget-scan \
	retarget-golden retarget-pointers retarget-warp retarget-vector \
	retarget-intrinsics retarget-constant retarget-corpus retarget-devbar \
	retarget-coop retarget-cxx \
	runtime-compile-cc runtime-compile-cache runtime-compile-gpu \
	runtime-compile-contract \
	sched-eu sched-offload-fault eu-gpu-probe eu-gpu-probe-steps \
	eu-gpu-builtins eu-gpu-code eu-gpu-modes eu-gpu eu-gpu-memory \
	eu-gpu-liveness eu-gpu-headroom eu-gpu-bringup \
	dev-group-args dev-group-members dev-group-one-process \
	dev-group-killed dev-group-all-dead dev-group-sweep dev-group-mode \
	dev-segments \
	coll-plan coll-ops coll-threads \
	coll-procs-args coll-procs-join coll-procs-heap coll-procs-matrix \
	coll-procs-pieces coll-procs-spin coll-procs-dead-peer \
	coll-procs-order coll-procs-cma coll-misuse coll-fuzz \
	segmap-grid segmap-rmap segmap-bad-maps segmap-access segmap-views \
	segmap-local-view segmap-forall segmap-copy-once segmap-seed-example \
	segmap-eu \
	segmap-procs-scope segmap-procs-balance segmap-procs-seed \
	rt-devices rt-context rt-queue-deps rt-queue-chain rt-queue-priority \
	rt-queue-events rt-queue-destroy rt-queue-shapes rt-fallback \
	rt-program rt-program-lanes rt-program-gpu \
	rt-retarget rt-retarget-gpu rt-cuda rt-corpus \
	api-version api-cplusplus

# The EU tests check-gpu runs again with AGILE_EU_POOL=gpu.
GPU_TESTS := eu-pool sched-eu \
	kernels-registry kernels-matlist kernels-axpy kernels-reduce \
	kernels-failures kernels-on-eus \
	eu-gpu-builtins eu-gpu-code eu-gpu-modes eu-gpu segmap-eu \
	eu-gpu-memory rt-fallback runtime-compile-gpu rt-program-gpu \
	rt-retarget-gpu rt-corpus
