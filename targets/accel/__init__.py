"""The accel target: a VTA-like int8 GEMM accelerator, its ISA, and a cycle-level simulator (issue 16)."""
