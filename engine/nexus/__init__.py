"""NEXUS reading: a tokenizer with positions, block splitting, data matrices and trees blocks."""
