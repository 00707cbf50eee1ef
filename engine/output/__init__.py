"""Writers of MrBayes' output files, one module per file type, header and rows from one column list;
the parameter names they share with the model summary (paramnames) and that summary (modelsummary)."""
