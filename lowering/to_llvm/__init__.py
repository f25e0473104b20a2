"""loops -> llvm dialect: one conversion per source dialect, gathered by convert-to-llvm."""
