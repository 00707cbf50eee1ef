"""Writers of MrBayes' output files, one module per file type, header and rows from one column list."""
