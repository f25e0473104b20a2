"""graph -> te: each fused kernel becomes tensor expressions (the op classes' te_compute)."""
