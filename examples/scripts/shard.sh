#!/bin/sh
# One shard of examples/fan-out-fan-in.yaml: $1 is the shard's number.
echo "shard $1 on GPU ${CUDA_VISIBLE_DEVICES:-none}"
sleep 1
echo "shard $1 done"
