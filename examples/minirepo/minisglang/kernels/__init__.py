"""The operator contract (fused_op, spec) and the Triton backends of the ops (ops/<group>/)."""
